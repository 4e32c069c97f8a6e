"""What a learner writes around the tape (issue #19 items 2 and 4): mt.function, TensorSpec,
formatting scalar Tensors, is_nan/is_inf/is_finite, mt.device and mt.config, mt.errors,
mt.data.Dataset."""

import numpy as np
import pytest

import minitape as mt

# -- mt.function and mt.TensorSpec ---------------------------------------------------------


def plain(x, y):
    return x * 2.0 + y


def test_function_without_arguments_returns_what_the_function_returns():
    f = mt.function(plain)
    x, y = mt.constant([1.0, 2.0]), mt.constant(0.5)
    np.testing.assert_array_equal(f(x, y).numpy(), plain(x, y).numpy())
    assert f.python_function is plain and f.__name__ == "plain"
    g = mt.function(jit_compile=True, reduce_retracing=True)(plain)
    np.testing.assert_array_equal(g(x, y).numpy(), plain(x, y).numpy())


def test_function_is_differentiable_like_the_plain_function():
    f = mt.function(input_signature=[mt.TensorSpec(None), mt.TensorSpec(None)])(plain)
    x = mt.Variable([1.0, 2.0])
    with mt.GradientTape() as tape:
        y = mt.reduce_sum(f(x, mt.constant(1.0)) ** 2)
    np.testing.assert_allclose(tape.gradient(y, x).numpy(), 2 * (2 * np.array([1, 2]) + 1) * 2)


SIG = [mt.TensorSpec([None, 2], mt.float32, name="x"), mt.TensorSpec([], mt.float32)]


def test_input_signature_accepts_matching_calls_exactly():
    f = mt.function(input_signature=SIG)(plain)
    x = mt.constant([[1.0, 2.0], [3.0, 4.0], [5.0, 6.0]])
    np.testing.assert_array_equal(f(x, mt.constant(1.0)).numpy(),
                                  plain(x, mt.constant(1.0)).numpy())
    np.testing.assert_array_equal(f(x, y=mt.constant(1.0)).numpy(),
                                  plain(x, mt.constant(1.0)).numpy())
    out = f([[1.0, 2.0]], 0.5)          # Python values converted to the spec's dtype
    assert out.dtype == mt.float32 and out.numpy().tolist() == [[2.5, 4.5]]


@pytest.mark.parametrize("args,match", [
    ((mt.ones([3, 3]), mt.constant(1.0)), r"can not cast TensorSpec\(shape=\(3, 3\)"),
    ((mt.ones([3]), mt.constant(1.0)), r"can not cast TensorSpec\(shape=\(3,\)"),
    ((mt.ones([3, 2], mt.float64), mt.constant(1.0)), r"dtype=mt.float64.* to TensorSpec"),
    ((mt.ones([3, 2]), mt.constant([1.0])), r"can not cast .*\(argument 'y'"),
    ((mt.ones([3, 2]),), r"has 2 argument\(s\)"),
    ((mt.ones([3, 2]), 1.0, 2.0), r"has 2 argument\(s\)"),
    ((mt.ones([3, 2]), "one"), r"'y'=|y='one'|cannot be converted"),
])
def test_input_signature_mismatch_raises_tensorflows_type_error(args, match):
    f = mt.function(input_signature=SIG)(plain)
    with pytest.raises(TypeError, match=match):
        f(*args)


class WithMethod(mt.Module):
    def __init__(self):
        super().__init__()
        self.w = mt.Variable(3.0)

    @mt.function(input_signature=[mt.TensorSpec(None)])
    def scale(self, x):
        return x * self.w


def test_function_on_a_method_binds_self_and_checks_the_rest():
    m = WithMethod()
    assert float(m.scale(mt.constant(2.0))) == 6.0
    assert isinstance(WithMethod.scale, mt.function(plain).__class__)
    with pytest.raises(TypeError, match="can not cast"):
        m.scale(mt.constant(2.0, mt.float64))


def test_tensor_spec():
    spec = mt.TensorSpec([None, 3], mt.float32, name="images")
    assert spec.shape == (None, 3) and spec.dtype == mt.float32 and spec.name == "images"
    assert spec.is_compatible_with(mt.zeros([7, 3]))
    assert not spec.is_compatible_with(mt.zeros([7, 3], mt.float64))
    assert not spec.is_compatible_with(mt.zeros([7, 3, 1]))
    assert spec.is_compatible_with(mt.TensorSpec([2, 3]))
    assert mt.TensorSpec(None).is_compatible_with(mt.zeros([1, 2, 3]))
    assert mt.TensorSpec.from_tensor(mt.zeros([2])) == mt.TensorSpec([2], mt.float32)
    assert repr(spec) == "TensorSpec(shape=(None, 3), dtype=mt.float32, name='images')"
    with pytest.raises(TypeError, match=r"write \[3\]"):
        mt.TensorSpec(3)


# -- formatting scalar Tensors ---------------------------------------------------------------

def test_format_a_scalar_tensor_as_numpy_does():
    assert f"{mt.constant(2.5):.2f}" == "2.50"
    t = mt.constant(3.14159)
    for spec in (".3f", "2.5f", "e", ">10.2f", "g"):
        assert format(t, spec) == format(np.float32(3.14159), spec)
    assert "%1.6f" % t == "3.141590"
    assert f"{mt.Variable(1.5):.1f}" == "1.5"
    assert f"{mt.constant(7):d}" == "7"
    assert f"{t}" == str(t)
    assert round(mt.constant(2.6)) == 3 and isinstance(round(mt.constant(2.6)), int)
    assert round(mt.constant(2.567), 2) == round(np.float32(2.567), 2)
    assert int(mt.constant(3.9)) == 3 and float(mt.constant(2.5)) == 2.5


def test_format_a_non_scalar_is_a_clear_error():
    with pytest.raises(TypeError, match=r"format spec '.2f' needs a scalar \(0-d\) Tensor, got "
                                        r"shape \(2,\)"):
        f"{mt.constant([1.0, 2.0]):.2f}"
    with pytest.raises(TypeError, match=r"round\(\) needs a scalar"):
        round(mt.constant([1.0, 2.0]))


# -- is_nan / is_inf / is_finite ------------------------------------------------------------

@pytest.mark.parametrize("name,ref", [("is_nan", np.isnan), ("is_inf", np.isinf),
                                      ("is_finite", np.isfinite)])
def test_is_nan_is_inf_is_finite(name, ref):
    values = np.array([0.0, -np.inf, np.nan, 1e38, np.inf], np.float32)
    out = getattr(mt.math, name)(mt.constant(values))
    assert out.dtype == np.bool_
    np.testing.assert_array_equal(out.numpy(), ref(values))
    x = mt.Variable(values)
    with mt.GradientTape() as tape:
        y = getattr(mt.math, name)(x)
    assert tape.gradient(y, x) is None
    with pytest.raises(TypeError, match="floating"):
        getattr(mt.math, name)(mt.constant([1, 2]))


# -- device, config, errors -------------------------------------------------------------------

@pytest.mark.parametrize("name", ["CPU", "cpu:0", "/CPU:0", "/device:CPU:0",
                                  "/job:localhost/replica:0/task:0/device:CPU:0", None])
def test_device_accepts_the_cpu(name):
    with mt.device(name):
        assert float(mt.constant(1.0) + 1.0) == 2.0


@pytest.mark.parametrize("name", ["/GPU:0", "GPU", "gpu:0", "/device:TPU:0", "/CPU:1",
                                  "/job:worker/task:1/device:GPU:1", "/device:GPU:*"])
def test_a_missing_device_falls_back_to_the_cpu_as_soft_placement(name):
    # TensorFlow 2's soft device placement (on by default) runs ops on the CPU when the
    # device asked for does not exist.
    x = mt.Variable(3.0)
    with mt.device(name):
        with mt.GradientTape() as tape:
            y = x * x
    assert float(y) == 9.0 and float(tape.gradient(y, x)) == 6.0


@pytest.mark.parametrize("name", ["my gpu", "/GPU:zero", "GPU:0:1"])
def test_device_refuses_what_is_not_a_device_name(name):
    with pytest.raises(mt.errors.InvalidArgumentError, match="not a device name"):
        mt.device(name)
    with pytest.raises(TypeError, match="a str"):
        mt.device(0)


def test_config_lists_one_cpu():
    devices = mt.config.list_physical_devices()
    assert [(d.name, d.device_type) for d in devices] == [("/physical_device:CPU:0", "CPU")]
    assert mt.config.list_physical_devices("GPU") == []
    mt.config.run_functions_eagerly(True)
    assert mt.config.functions_run_eagerly()


def test_errors_are_tensorflows_classes_and_pythons():
    e = mt.errors.InvalidArgumentError(None, None, "bad")
    assert isinstance(e, mt.errors.OpError) and isinstance(e, ValueError) and str(e) == "bad"
    assert issubclass(mt.errors.NotFoundError, FileNotFoundError)
    assert issubclass(mt.errors.OutOfRangeError, IndexError)
    assert issubclass(mt.errors.UnimplementedError, NotImplementedError)
    assert mt.errors.InvalidArgumentError.error_code == 3


# -- mt.data.Dataset -------------------------------------------------------------------------

def test_from_tensor_slices_and_batch():
    x = np.arange(10, dtype=np.float32).reshape(5, 2)
    ds = mt.data.Dataset.from_tensor_slices((x, [0, 1, 2, 3, 4]))
    assert len(ds) == 5
    first = next(iter(ds))
    assert first[0].numpy().tolist() == [0.0, 1.0] and first[1].dtype == mt.int32
    batches = list(ds.batch(2))
    assert [b[0].shape for b in batches] == [(2, 2), (2, 2), (1, 2)]
    assert len(ds.batch(2)) == 3 and len(ds.batch(2, drop_remainder=True)) == 2
    assert [b[1].numpy().tolist() for b in ds.batch(2, drop_remainder=True)] == [[0, 1], [2, 3]]
    d = mt.data.Dataset.from_tensor_slices({"a": [1.0, 2.0], "b": [3, 4]})
    assert [e["b"].numpy() for e in d] == [3, 4]


def test_shuffle_repeat_take():
    ds = mt.data.Dataset.from_tensor_slices(list(range(10)))
    mt.random.set_seed(0)
    once = [int(t) for t in ds.shuffle(10)]
    assert sorted(once) == list(range(10)) and once != list(range(10))
    shuffled = ds.shuffle(10)
    assert [int(t) for t in shuffled] != [int(t) for t in shuffled]   # reshuffled per pass
    fixed = ds.shuffle(10, seed=3, reshuffle_each_iteration=False)
    assert [int(t) for t in fixed] == [int(t) for t in fixed]
    small = [int(t) for t in ds.shuffle(2)]   # a small buffer keeps elements near their place
    assert sorted(small) == list(range(10))
    assert small[0] in (0, 1)
    assert [int(t) for t in ds.repeat(2)] == list(range(10)) * 2
    assert [int(t) for t in ds.repeat().take(13)] == list(range(10)) + [0, 1, 2]
    assert ds.repeat().cardinality() == -1 and len(ds.repeat(3)) == 30
    assert [int(t) for t in ds.take(3)] == [0, 1, 2] and len(ds.take(30)) == 10
    assert [int(t) for t in ds.skip(8)] == [8, 9]
    assert [int(t) for t in ds.map(lambda t: t * 2).take(2)] == [0, 2]


def test_training_loop_over_a_dataset():
    rng = np.random.default_rng(0)
    x = rng.normal(size=(32, 1)).astype(np.float32)
    y = 3 * x - 1
    w, b = mt.Variable([[0.0]]), mt.Variable([0.0])
    opt = mt.optimizers.SGD(learning_rate=0.1)
    mt.random.set_seed(0)
    for xb, yb in mt.data.Dataset.from_tensor_slices((x, y)).shuffle(32).batch(8).repeat(20):
        with mt.GradientTape() as tape:
            loss = mt.reduce_mean((xb @ w + b - yb) ** 2)
        opt.apply_gradients(zip(tape.gradient(loss, [w, b]), [w, b]))
    assert float(w[0, 0]) == pytest.approx(3.0, abs=1e-3)
    assert float(b[0]) == pytest.approx(-1.0, abs=1e-3)


def test_dataset_errors():
    with pytest.raises(ValueError, match="same first dimension"):
        mt.data.Dataset.from_tensor_slices(([1.0, 2.0], [1.0]))
    with pytest.raises(ValueError, match="got a scalar"):
        mt.data.Dataset.from_tensor_slices(1.0)
    with pytest.raises(TypeError, match="infinite"):
        len(mt.data.Dataset.range(3).repeat())


# -- meshgrid --------------------------------------------------------------------------------

@pytest.mark.parametrize("indexing", ["xy", "ij"])
@pytest.mark.parametrize("sizes", [(3,), (3, 2), (2, 4, 3)])
def test_meshgrid_matches_numpy(indexing, sizes):
    inputs = [np.arange(n, dtype=np.float32) + 10 * k for k, n in enumerate(sizes)]
    got = mt.meshgrid(*[mt.constant(a) for a in inputs], indexing=indexing)
    want = np.meshgrid(*inputs, indexing=indexing)
    assert len(got) == len(want)
    for g, w in zip(got, want):
        np.testing.assert_array_equal(g.numpy(), w)


def test_meshgrid_gradient_sums_over_repeats():
    from minitape.testing import check_grads
    check_grads(lambda x, y: [a * b for a, b in [mt.meshgrid(x, y)]][0],
                np.array([1.0, 2.0, 3.0]), np.array([0.5, -1.0]))
    with pytest.raises(ValueError, match="must be 1-D"):
        mt.meshgrid(mt.ones([2, 2]))


class CallWithSignature(mt.Module):
    def __init__(self):
        super().__init__()
        self.w = mt.Variable(2.0)

    @mt.function(input_signature=[mt.TensorSpec([None])])
    def __call__(self, x):
        return x * self.w


def test_signature_on_a_modules_call_and_an_unbound_call():
    m = CallWithSignature()
    assert m(mt.constant([1.0, 2.0])).numpy().tolist() == [2.0, 4.0]
    assert WithMethod.scale(WithMethod(), mt.constant(1.0)).numpy() == 3.0
    with pytest.raises(TypeError, match="can not cast"):
        m(mt.constant([[1.0]]))
