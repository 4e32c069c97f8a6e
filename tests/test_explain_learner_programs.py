"""explain on programs a learner writes (a notebook cell or a script: their own names, helpers,
training loops, Keras layers), where the gradient is NaN, inf or None. Each test checks the
gradient first (against central finite differences in float64 or TensorFlow's documented
value), then that the sentence names the real cause, at the learner's line, in their names.
"""

import os

import numpy as np
import pytest

import minitape as mt
from minitape.viz import explain

HERE = os.path.basename(__file__)


def line_of(text):
    with open(__file__) as f:
        hits = [n for n, line in enumerate(f, start=1)
                if text in line and "line_of(" not in line]
    assert len(hits) == 1, (text, hits)
    return hits[0]


def flat(explanation):
    """The sentence on one line (as ``print`` shows it, unwrapped)."""
    return str.__str__(explanation)


@pytest.fixture(autouse=True)
def source_lines():
    was = mt.config.source_lines_recorded()
    mt.config.record_source_lines(True)
    with np.errstate(all="ignore"):
        yield
    mt.config.record_source_lines(was)


def central_difference(f, x, eps=1e-6):
    """d f / d x, elementwise, in float64."""
    x = np.asarray(x, np.float64)
    grad = np.zeros_like(x)
    for i in np.ndindex(x.shape):
        up, down = x.copy(), x.copy()
        up[i] += eps
        down[i] -= eps
        grad[i] = (f(up) - f(down)) / (2 * eps)
    return grad


# -- a NaN that was already in the forward pass ---------------------------------------------------

@pytest.mark.parametrize("persistent", [False, True])
def test_nan_in_the_data_is_named_not_a_derivative(persistent):
    features = np.array([[1.0, 2.0], [np.nan, 1.0], [0.5, 0.5]], dtype=np.float32)
    targets = np.array([[1.0], [0.0], [1.0]], dtype=np.float32)
    w = mt.Variable([[0.1], [0.2]])
    b = mt.Variable(0.0)
    with mt.GradientTape(persistent=persistent) as tape:
        pred = features @ w + b  # reads the data
        loss = mt.reduce_mean((pred - targets) ** 2)
    dw, db = tape.gradient(loss, [w, b])
    assert np.isnan(dw.numpy()).all() and np.isnan(db.numpy()).all()
    text = flat(explain(tape, loss, [w, b]))
    assert "no derivative is to blame: the input features already holds nan at [1, 0]" in text
    assert f"matmul (op #1, {HERE}:{line_of('# reads the data')}: pred = features @ w + b)" \
        in text
    assert "(the target loss is nan)" in text and "np.isnan(features).any()" in text
    # Not the old answer, which blamed the square's derivative at a NaN it was given.
    assert "has derivative" not in text and "pow" not in text
    assert "\n" not in text.split("the source b")[0].strip()   # the value on one line


def test_a_variable_made_nan_by_an_earlier_step_is_named():
    w = mt.Variable([1.0, np.nan])
    x = mt.constant([2.0, 3.0])
    with mt.GradientTape() as tape:
        loss = mt.reduce_sum(w * x) ** 2
    assert np.isnan(tape.gradient(loss, w).numpy()).all()
    text = flat(explain(tape, loss, w))
    assert "no derivative is to blame: the Variable w already holds nan at [1]" in text
    assert "enable_check_numerics" in text


def test_log_of_zero_in_the_forward_pass_is_named_not_the_square_after_it():
    w = mt.Variable(3.0)
    with mt.GradientTape() as tape:
        h = w * 2.0
        z = mt.math.log(h - 6.0)  # -inf in the forward pass
        loss = z * z
    assert tape.gradient(loss, w).numpy() == -np.inf   # 2 z * 1/(h - 6) * 2 = -inf * inf
    text = flat(explain(tape, loss, w))
    assert "the forward pass already went wrong, before any gradient: log (op #3, " \
        f"{HERE}:{line_of('# -inf in the forward')}: z = mt.math.log(h - 6.0)) at h - 6.0 " \
        "= 0.0 gives -inf" in text
    assert "# -inf" not in text             # the learner's comment is not quoted
    assert "(the target loss is inf)" in text
    assert "multiply at z" not in text


def test_exp_overflow_in_float32_is_named_with_the_limit():
    scores = mt.Variable([10.0, 100.0])
    with mt.GradientTape() as tape:
        e = mt.exp(scores)
        probs = e / mt.reduce_sum(e)
        loss = -mt.math.log(probs[0])
    assert np.isnan(tape.gradient(loss, scores).numpy()).all()
    text = flat(explain(tape, loss, scores))
    assert "exp (op #1, " in text and "at scores[1] = 100.0 gives inf" in text
    assert "larger than float32 can hold" in text and "88.7" in text
    assert "mt.nn.log_softmax" in text and "mt.reduce_max" in text


def test_inf_in_a_matrix_times_zero_is_named_as_data():
    A = mt.constant([[np.inf, 1.0], [2.0, 3.0]])
    x = mt.Variable([[0.0], [1.0]])
    with mt.GradientTape() as tape:
        y = A @ x
        loss = mt.reduce_sum(y)
    # d loss / d x = A^T @ ones: [inf + 2, 1 + 3] (TensorFlow: the same), loss = inf * 0 = nan
    np.testing.assert_array_equal(tape.gradient(loss, x).numpy().ravel(), [np.inf, 4.0])
    text = flat(explain(tape, loss, x))
    assert "the input A already holds inf at [0, 0]" in text
    assert "(the target loss is nan)" in text


def test_log_of_an_underflowed_softmax_says_the_loss_is_nan_too():
    logits = mt.Variable([1000.0, 0.0, -1000.0])
    y_true = mt.constant([0.0, 0.0, 1.0])

    def cross_entropy(y_true, logits):
        p = mt.nn.softmax(logits)
        return -mt.reduce_sum(y_true * mt.math.log(p))  # log of a softmax

    with mt.GradientTape() as tape:
        loss = cross_entropy(y_true, logits)
    assert np.isnan(tape.gradient(loss, logits).numpy()).all()
    text = flat(explain(tape, loss, logits))
    assert f"log (op #2, {HERE}:{line_of('# log of a softmax')}: " in text
    assert "log at p[1] = 0.0 has derivative inf; multiply (op #3) sends it -0.0; " \
        "inf * -0.0 = nan (in the forward pass it already gave -inf there, so the target " \
        "loss is nan too)." in text
    assert "mt.nn.log_softmax(logits)" in text


def test_sigmoid_cross_entropy_by_hand_advises_the_logits():
    def sigmoid(z):
        return 1.0 / (1.0 + mt.exp(-z))

    def bce(y, p):
        return -mt.reduce_mean(y * mt.math.log(p) + (1.0 - y) * mt.math.log(1.0 - p))

    w = mt.Variable([[20.0], [-30.0]])
    X = mt.constant([[1.0, 0.0], [0.0, 1.0]])
    y = mt.constant([[1.0], [0.0]])
    with mt.GradientTape() as tape:
        loss = bce(y, sigmoid(X @ w))
    assert np.isnan(tape.gradient(loss, w).numpy()).all()
    text = flat(explain(tape, loss, w))
    assert "log at (1.0 - p)[0, 0] = 0.0 has derivative inf" in text
    assert "mt.nn.softplus(z) - y * z" in text and "from_logits=True" in text


def test_a_large_tensor_on_a_released_tape_is_not_blamed_on_an_add():
    rng = np.random.default_rng(0)
    X = rng.normal(size=(100, 3)).astype(np.float32)
    X[17, 2] = np.nan
    y = rng.normal(size=(100, 1)).astype(np.float32)
    model = mt.keras.Sequential([mt.keras.layers.Dense(8, activation="relu"),
                                 mt.keras.layers.Dense(1)])
    model(X[:1])
    with mt.GradientTape() as tape:
        pred = model(X)
        loss = mt.reduce_mean(mt.square(pred - y))
    kernel = model.trainable_variables[0]
    assert np.isnan(tape.gradient(loss, kernel).numpy()).any()
    text = flat(explain(tape, loss, kernel))
    # The released tape kept no values of X: it says what it knows, and how to find out.
    assert "already NaN or infinite in the forward pass (the target loss is nan)" in text
    assert "enable_check_numerics" in text and "the gradient of add" not in text
    with mt.GradientTape(persistent=True) as tape:
        pred = model(X)
        loss = mt.reduce_mean(mt.square(pred - y))
    assert "the input X already holds nan at [17, 2]" in flat(explain(tape, loss, kernel))


# -- a NaN or inf made in the backward pass -------------------------------------------------------

def test_a_division_by_zero_names_both_operands():
    x = mt.Variable([1.0, 2.0, 3.0])
    counts = mt.constant([1.0, 0.0, 2.0])
    with mt.GradientTape() as tape:
        avg = mt.reduce_sum(x / counts)
    np.testing.assert_array_equal(tape.gradient(avg, x).numpy(), [1.0, np.inf, 0.5])
    text = flat(explain(tape, avg, x))
    assert "divide at x[1] = 2.0, counts[1] = 0.0 has derivative inf with respect to x; " \
        "reduce_sum (op #2) sends it 1.0; inf * 1.0 = inf" in text
    assert "mt.math.divide_no_nan" in text
    assert text.count("the usual fix") == 1


def test_numbers_are_printed_in_their_own_dtype():
    x = mt.Variable([1.0, 0.0, 2.0])
    with mt.GradientTape() as tape:
        mean_log = mt.reduce_mean(mt.math.log(x))
    assert tape.gradient(mean_log, x).numpy()[1] == np.inf
    text = flat(explain(tape, mean_log, x))
    assert "log at x[1] = 0.0 has derivative inf; reduce_mean (op #2) sends it 0.33333334; " \
        "inf * 0.33333334 = inf" in text
    assert "0.3333333432674408" not in text and "np.float32" not in text


def test_a_gradient_that_overflows_in_a_long_chain():
    x = mt.Variable(1.0)
    with mt.GradientTape() as tape:
        h = x * 1e-30
        for layer in range(40):
            h = h * 10.0  # one layer
        loss = h
    # Forward 1e10 (finite); backward 10**40 passes float32's largest number: inf.
    assert np.isfinite(loss.numpy()) and tape.gradient(loss, x).numpy() == np.inf
    text = flat(explain(tape, loss, x))
    assert "has derivative 10.0 with respect to" in text
    assert "10.0 * 1.0000001e+38 = inf, larger than float32 can hold" in text
    assert "exploding gradient" in text and "10.0 = 10.0" not in text
    assert f"{HERE}:{line_of('# one layer')}: h = h * 10.0)" in text


def test_a_custom_gradient_that_returns_nan_is_named_by_its_function():
    @mt.custom_gradient
    def my_log(x):
        def grad(upstream):
            return upstream / x * 0.0 / 0.0
        return mt.math.log(x), grad

    x = mt.Variable(2.0)
    with mt.GradientTape() as tape:
        y = my_log(x) * 3.0
    assert np.isnan(tape.gradient(y, x).numpy())
    text = flat(explain(tape, y, x))
    assert "the gradient function that my_log defines with mt.custom_gradient at x = 2.0 " \
        "turned the finite gradient 3.0 that multiply (op #3) sent into nan" in text
    assert "CustomGradient" not in text and "the usual fix: the usual" not in text


def test_the_seed_of_a_target_is_named_in_plain_words():
    x = mt.Variable([4.0, 0.0, 1.0])
    with mt.GradientTape(persistent=True) as tape:
        roots = mt.sqrt(x)
    jacobian = tape.jacobian(roots, x).numpy()
    np.testing.assert_array_equal(np.diag(jacobian), [0.25, np.inf, 0.5])
    text = flat(explain(tape, roots, x))           # (the Jacobian's row: see below)
    assert "the seed of roots[1] (1.0 there, 0.0 at the other elements of roots)" in text
    tape.gradient(roots, x)                         # (the gradient of the sum: ones)
    text = flat(explain(tape, roots, x))
    assert "the seed of the target roots (ones) sends it 1.0; inf * 1.0 = inf" in text
    assert "roots's" not in text


# -- gradients whose value is right at the edge (no explanation needed) ---------------------------

def test_edge_gradients_match_tensorflow_and_finite_differences():
    x = mt.Variable([2.0, 0.0, -1.0])
    with mt.GradientTape(persistent=True) as tape:
        r = mt.reduce_sum(mt.where(x > 0, mt.sqrt(x), 0.0))
        unit = mt.reduce_sum(mt.math.l2_normalize(mt.zeros(3) * x))
        factors = mt.reduce_prod(x + mt.constant([0.0, 0.0, 4.0]))
        safe = mt.reduce_sum(mt.math.divide_no_nan(mt.constant([1.0, 1.0, 2.0]), x))
    # TensorFlow's SqrtGrad gives 0 where the upstream gradient is 0 (also at sqrt(-1) = nan).
    np.testing.assert_allclose(tape.gradient(r, x).numpy(), [0.5 / np.sqrt(2.0), 0.0, 0.0])
    assert "passes the gradient to the branch it chose" in flat(explain(tape, r, x))
    # l2_normalize of a zero vector: x * rsqrt(max(sum x^2, 1e-12)), as TensorFlow: 0 * 1e6.
    np.testing.assert_array_equal(tape.gradient(unit, x).numpy(), [0.0, 0.0, 0.0])
    values = np.array([2.0, 0.0, 3.0])
    np.testing.assert_allclose(tape.gradient(factors, x).numpy(),
                               central_difference(np.prod, values), atol=1e-5)
    np.testing.assert_array_equal(tape.gradient(safe, x).numpy(), [-0.25, 0.0, -2.0])
    assert flat(explain(tape, safe, x)).endswith("so its gradient is not None")


# -- None --------------------------------------------------------------------------------------

def test_a_keras_layer_the_model_does_not_call_is_named_by_its_path():
    class TwoHeads(mt.keras.Model):
        def __init__(self):
            super().__init__()
            self.body = mt.keras.layers.Dense(4, activation="relu")
            self.head_a = mt.keras.layers.Dense(1)
            self.head_b = mt.keras.layers.Dense(1)

        def call(self, x):
            return self.head_a(self.body(x))

    model = TwoHeads()
    xb = mt.constant(np.ones((3, 2), np.float32))
    model(xb)
    model.head_b(mt.zeros((1, 4)))
    with mt.GradientTape() as tape:
        loss = mt.reduce_mean(model(xb) ** 2)
    grads = tape.gradient(loss, model.trainable_variables)
    assert [g is None for g in grads] == [False] * 4 + [True] * 2
    lines = flat(explain(tape, loss, model.trainable_variables)).split("\n")
    heads = [v.path for v in model.trainable_variables]
    assert len(set(heads)) == 6
    # Each sentence names its own variable by its path, so two layers' kernels differ.
    for line, path in zip(lines, heads):
        assert line.startswith(f"the source {path} (a Variable)"), (line, path)
    assert f"belongs to the layer {heads[4].split('/')[0]}, which was not called" in lines[4]
    assert lines[5].endswith(f"the same as for {heads[4]}")


def test_numpy_warnings_of_a_backward_pass_point_at_the_learners_line():
    probs = mt.Variable([0.5, 0.0])
    with mt.GradientTape() as tape:
        loss = -mt.reduce_sum(mt.math.log(probs))  # the warning's line
    # (minitape installs NumPy's "call" for these at import; the fixture ignored them.)
    with np.errstate(divide="call", invalid="call"), pytest.warns(RuntimeWarning) as caught:
        tape.gradient(loss, probs)
    assert {(os.path.basename(w.filename), w.lineno) for w in caught} == {
        (HERE, line_of("# the warning's line"))}


# -- double where with pow and divide; second order; a released tape ------------------------------

def test_the_double_where_for_a_power_and_a_division_is_written_out():
    x = mt.Variable([0.0, 4.0])
    den = mt.Variable([0.0, 2.0])
    with mt.GradientTape(persistent=True) as tape:
        c = mt.reduce_sum(mt.where(x > 0, x ** 0.5, 0.0))
        ratio = mt.reduce_sum(mt.where(den != 0.0, x / den, 0.0))
    # TensorFlow's PowGrad: 0 * 0.5 * 0 ** -0.5 = nan where the branch is not chosen.
    np.testing.assert_array_equal(tape.gradient(c, x).numpy(), [np.nan, 0.25])
    text = flat(explain(tape, c, x))
    assert "pow at x[0] = 0.0 has derivative inf with respect to x; where (op #3) sends it " \
        "0.0; inf * 0.0 = nan" in text
    assert "mt.where(x > 0.0, mt.where(x > 0.0, x, 1.0) ** 0.5, 0.0)" in text
    # d (x / den) / d den = -x / den**2 = -0 / 0 = nan, times the 0 where sends: nan.
    np.testing.assert_array_equal(tape.gradient(ratio, den).numpy(), [np.nan, -1.0])
    text = flat(explain(tape, ratio, den))
    assert "divide at x[0] = 0.0, den[0] = 0.0 has derivative nan with respect to den" in text
    assert "A derivative that is itself NaN" in text and "infinite derivative" not in text
    assert "x / mt.where(den != 0.0, den, 1.0)" in text and "divide_no_nan(x, den)" in text


def test_a_second_derivative_of_a_nan_first_derivative_says_so():
    def smooth_abs(v):
        return mt.sqrt(v * v)

    x = mt.Variable(0.0)
    with mt.GradientTape() as outer:
        with mt.GradientTape() as inner:
            y = smooth_abs(x)
        dy_dx = inner.gradient(y, x)  # the first derivative
    assert np.isnan(dy_dx.numpy()) and np.isnan(outer.gradient(dy_dx, x).numpy())
    text = flat(explain(outer, dy_dx, x))
    assert "the gradient of sqrt (SqrtGrad) (op #3, " \
        f"{HERE}:{line_of('# the first derivative')}: dy_dx = inner.gradient(y, x)) at y = " \
        "0.0 gives inf" in text
    assert "(the target dy_dx is nan)" in text and "explain it first, with the inner tape" \
        in text
    assert "sqrt at v * v = 0.0 has derivative inf" in flat(explain(inner, y, x))


def test_a_released_tape_says_it_could_not_check_the_value():
    # (A small Jacobian's rows are kept by the record: see the Jacobian tests below; one
    # of 300 x 300 is not.)
    x = mt.Variable(np.r_[4.0, 0.0, np.ones(298)].astype(np.float32))
    with mt.GradientTape() as tape:
        roots = mt.sqrt(x)
    jacobian = tape.jacobian(roots, x).numpy()
    assert jacobian[1, 1] == np.inf
    text = flat(explain(tape, roots, x))
    assert "could not check whether the gradient is finite" in text
    assert "persistent=True" in text


def test_a_training_loop_that_diverged_is_told_to_lower_the_learning_rate():
    X = mt.constant(np.linspace(-30.0, 30.0, 8, dtype=np.float32).reshape(-1, 1))
    y = 3.0 * X + 1.0
    w = mt.Variable([[0.5]])
    b = mt.Variable([0.0])
    lr = 0.5
    for step in range(100):
        with mt.GradientTape() as tape:
            pred = X @ w + b
            loss = mt.reduce_mean(mt.square(pred - y))
        dw, db = tape.gradient(loss, [w, b])
        if not np.isfinite(dw.numpy()).all():
            break
        w.assign_sub(lr * dw)
        b.assign_sub(lr * db)
    assert 0 < step < 99 and np.isinf(dw.numpy()).all() and np.isinf(loss.numpy())
    text = flat(explain(tape, loss, w))
    assert "the gradient of matmul at w = " in text
    assert "larger than float32 can hold (about 3.4e+38); the target loss is inf in the " \
        "forward pass too, from square (op #4), which gives inf" in text
    assert "as it does when the steps of a training loop overshoot (it diverged): lower the " \
        "learning rate" in text
    assert "double mt.where" not in text


def test_a_softmax_over_a_row_masked_with_minus_inf_is_named_not_the_mask():
    scores = mt.Variable([[1.0, 2.0], [3.0, 4.0]])
    mask = mt.constant([[0.0, -np.inf], [-np.inf, -np.inf]])   # the last row all masked
    with mt.GradientTape() as tape:
        attn = mt.nn.softmax(scores + mask)  # attention weights
        out = mt.reduce_sum(attn * mt.constant([[1.0, 2.0], [3.0, 4.0]]))
    grad = tape.gradient(out, scores).numpy()
    # Row 0: softmax([1, -inf]) = [1, 0], whose gradient is 0; row 1 is 0/0 = nan (as TF).
    np.testing.assert_array_equal(grad, [[0.0, 0.0], [np.nan, np.nan]])
    text = flat(explain(tape, out, scores))
    # The -inf in the mask's first row is meant; the NaN starts at the softmax of the last.
    assert "the input mask already holds" not in text
    assert f"softmax (op #2, {HERE}:{line_of('# attention weights')}: " in text
    assert "[1, 0] = -inf gives nan from an infinite input" in text
    assert "add a large negative number (-1e9) rather than -inf" in text


def test_a_finite_gradient_of_a_nan_loss_says_where_the_loss_went_nan():
    sigma = mt.Variable(-0.5)
    data = mt.constant([0.1, -0.2, 0.3])
    with mt.GradientTape() as tape:
        nll = mt.reduce_mean(mt.math.log(sigma) + 0.5 * (data / sigma) ** 2)  # the NLL
    # d/dsigma: 1/sigma - mean(data**2) / sigma**3, finite though log(-0.5) is nan.
    expected = 1 / -0.5 - np.mean(np.array([0.1, -0.2, 0.3]) ** 2) / (-0.5) ** 3
    assert np.isnan(nll.numpy())
    np.testing.assert_allclose(tape.gradient(nll, sigma).numpy(), expected, rtol=1e-6)
    text = flat(explain(tape, nll, sigma))
    assert text.startswith("the source sigma (a Variable) is connected")
    assert "its value is finite, but the target nll itself is nan in the forward pass: " \
        f"log (op #1, {HERE}:{line_of('# the NLL')}: " in text
    assert "at sigma = -0.5 gives nan: the log of a negative number is NaN" in text
    assert "sigma = mt.exp(log_sigma)" in text


def test_round_on_the_path_offers_the_straight_through_estimator():
    v = mt.Variable(2.0)
    with mt.GradientTape(persistent=True) as tape:
        q = mt.round(v * 1.3)
        loss = q * q
        straight = v * 1.3 + mt.stop_gradient(mt.round(v * 1.3) - v * 1.3)
        loss_st = straight * straight
    assert tape.gradient(loss, v) is None
    # Straight through: d/dv (q**2) with dq/dv taken as 1.3: 2 * 3.0 * 1.3.
    np.testing.assert_allclose(tape.gradient(loss_st, v).numpy(), 2 * 3.0 * 1.3, rtol=1e-6)
    text = flat(explain(tape, loss, v))
    assert "goes through Round (op #2, " in text and "x + mt.stop_gradient(mt.round(x) - x)" \
        in text


def test_a_log_softmax_over_a_masked_row_gets_the_mask_advice():
    logits = mt.Variable([[1.0, 2.0], [3.0, 4.0]])
    mask = mt.constant([[0.0, 0.0], [-np.inf, -np.inf]])
    with mt.GradientTape() as tape:
        logp = mt.nn.log_softmax(logits + mask)
        nll = -mt.reduce_sum(logp * mt.constant([[1.0, 0.0], [0.0, 1.0]]))
    grad = tape.gradient(nll, logits).numpy()
    # Row 0: softmax - onehot = [0.269 - 1, 0.731]; row 1 is nan (as TensorFlow).
    p = np.exp([1.0, 2.0]) / np.exp([1.0, 2.0]).sum()
    np.testing.assert_allclose(grad[0], p - [1.0, 0.0], rtol=1e-6)
    assert np.isnan(grad[1]).all()
    text = flat(explain(tape, nll, logits))
    assert "log_softmax (op #2, " in text and "gives nan from an infinite input" in text
    assert "add a large negative number (-1e9) rather than -inf" in text


def test_a_source_made_after_the_block_is_named_as_such_not_as_unwatched():
    x = mt.constant(3.0)
    with mt.GradientTape() as tape:
        tape.watch(x)
        y = x * x
    said = flat(explain(tape, y, mt.constant(3.0)))   # a new Tensor of the same value
    assert "was made after the `with` block had ended" in said, said
    assert "tape.watch(x)" not in said                # (no invented name)
    assert "is connected to the target" in flat(explain(tape, y, x))


# -- Jacobians: which row went NaN ----------------------------------------------------------------

@pytest.mark.parametrize("persistent,pfor", [(False, True), (True, True), (True, False)])
def test_a_jacobian_with_one_infinite_row_names_the_row_the_op_and_the_line(persistent, pfor):
    # explain checked the gradient of sum(y) (``the seed of the target (ones)``) or, on a
    # released tape, nothing at all; the Jacobian's rows are the gradients of y[0], y[1], ...
    x = mt.Variable([0.0, 1.0, 4.0])
    with mt.GradientTape(persistent=persistent) as tape:
        y = mt.sqrt(x)                                    # the sqrt line
    jac = tape.jacobian(y, x, experimental_use_pfor=pfor).numpy()
    # d sqrt(x_i) / d x_j = [i == j] / (2 sqrt(x_i)): inf at x_0 = 0, 0 off the diagonal
    # (TensorFlow's SqrtGrad gives 0 there, where the cotangent is 0).
    np.testing.assert_array_equal(jac, np.diag([np.inf, 0.5, 0.25]).astype(np.float32))
    text = flat(explain(tape, y, x))
    assert text.startswith("row 0 of the Jacobian of y with respect to the source x "
                           "(a Variable), the gradient of y[0], is [inf, 0., 0.]: "), text
    assert f"sqrt (op #1, {HERE}:{line_of('# the sqrt line')}: y = mt.sqrt(x))" in text
    assert "sqrt at x[0] = 0.0 has derivative inf" in text
    assert "the seed of y[0] (1.0 there, 0.0 at the other elements of y) sends it 1.0" in text
    assert "mt.sqrt(s + 1e-12)" in text


def test_a_jacobian_whose_nan_is_off_the_diagonal_names_the_zero_times_inf():
    v = mt.Variable([2.0, 0.0, 1.0])
    with mt.GradientTape() as tape:
        loss = mt.math.log(v) * 3.0                       # the log line
    jac = tape.jacobian(loss, v).numpy()
    # Row 0 is the gradient of loss[0] = 3 log(v_0): 3 / v_0 at column 0; at column 1 the
    # cotangent 0 meets log's derivative 1 / 0 = inf: 0 * inf = nan, in TensorFlow too
    # (LogGrad is grad * reciprocal(x)).
    np.testing.assert_array_equal(np.isnan(jac), [[0, 1, 0], [0, 0, 0], [0, 1, 0]])
    np.testing.assert_allclose(jac[0, [0, 2]], [1.5, 0.0])
    text = flat(explain(tape, loss, v))
    assert text.startswith("row 0 of the Jacobian of loss with respect to the source v "
                           "(a Variable), the gradient of loss[0], is [1.5, nan, 0. ] "
                           "(rows 1, 2 too): "), text
    assert f"log (op #1, {HERE}:{line_of('# the log line')}: " in text
    assert "log at v[1] = 0.0 has derivative inf; multiply (op #2) sends it 0.0; " \
        "inf * 0.0 = nan" in text
    assert "mt.math.log(p + 1e-7)" in text


def test_a_batch_jacobian_names_the_position_and_the_example():
    xs = mt.Variable([[1.0, 0.0], [2.0, 3.0]])
    with mt.GradientTape() as tape:
        z = mt.math.log(xs)
    jac = tape.batch_jacobian(z, xs).numpy()
    assert np.isnan(jac[0, 0, 1]) and np.isinf(jac[0, 1, 1])
    text = flat(explain(tape, z, xs))
    assert text.startswith("the batch Jacobian of z with respect to the source xs "
                           "(a Variable) holds NaN for z[:, 0] (position 0 of every "
                           "example), whose gradient is [[1. , nan], [0.5, 0. ]] "
                           "(position 1 too): "), text
    assert "log at xs[0, 1] = 0.0 has derivative inf; the seed of z[:, 0] (1.0 there in " \
        "every example, 0.0 elsewhere) sends it 0.0; inf * 0.0 = nan" in text


def test_a_finite_jacobian_and_the_jacobian_given_as_the_target():
    x = mt.Variable([1.0, 4.0])
    with mt.GradientTape(persistent=True) as tape:
        y = mt.sqrt(x)
    jac = tape.jacobian(y, x)
    assert flat(explain(tape, y, x)) == ("the source x (a Variable) is connected to the "
                                         "target y through the recorded operations, so its "
                                         "gradient is not None")
    # The Jacobian itself is no target: it was "computed after the with block".
    text = flat(explain(tape, jac, x))
    assert text.startswith("the target jac is what tape.jacobian returned, not a value the "
                           "tape recorded"), text
    assert "explain(tape, y, x) (after tape.jacobian(y, x) it checks each row" in text
    grad = tape.gradient(y, x)
    assert "explain(tape, y, x)" in flat(explain(tape, grad, x))


def test_the_drawings_note_on_a_nan_gradient_does_not_ask_why_it_is_none():
    from minitape.viz import draw_tape
    x = mt.Variable([0.0, 1.0])
    with mt.GradientTape() as tape:
        y = mt.sqrt(x)
    tape.gradient(y, x)
    dot = draw_tape(tape, y, x).source
    assert "why NaN or inf: the gradient of the source x" in dot and "why None" not in dot
    with mt.GradientTape() as tape:
        z = mt.constant(2.0) * 3.0
    assert "why None: " in draw_tape(tape, z, x).source


def test_a_loop_that_rebinds_the_target_names_the_earlier_value_that_depended():
    # TensorFlow #25333: "GradientTape.gradient() only returns gradient for last variable":
    # the loop kept only the last product in y.
    x = mt.constant(2.0)
    ws = [mt.Variable(1.0), mt.Variable(2.0), mt.Variable(3.0)]
    with mt.GradientTape() as tape:
        for w in ws:
            y = w * x                                     # the loop's line
    grads = tape.gradient(y, ws)
    assert grads[0] is None and grads[1] is None and float(grads[2]) == 2.0
    first, second, third = flat(explain(tape, y, ws)).split("\n")
    assert first.startswith("the target y does not depend on the source ws[0] (a Variable): "
                            "y₁, an earlier value of y (op #1 in iteration 1 of 3 of a loop"), \
        first
    assert f"{HERE}:{line_of('# the loop' + chr(39) + 's line')}: y = w * x), depends on it, " \
        "but y was bound again after it" in first
    assert "add them up (y = y + ..., starting from 0.0)" in first
    assert second == "the source ws[1] (a Variable): the same as for ws[0]"
    assert "is connected to the target y" in third


def test_an_empty_list_of_sources_says_where_the_weights_went():
    # A layer made inside call() is not tracked: trainable_variables is empty, and explain
    # said "the source is a tuple, not a minitape Tensor".
    class MakesItsLayerInCall(mt.keras.Model):
        def call(self, x):
            return mt.keras.layers.Dense(1)(x)

    model = MakesItsLayerInCall()
    x = np.ones((2, 3), np.float32)
    with mt.GradientTape() as tape:
        out = mt.reduce_sum(model(x))
    assert len(model.trainable_variables) == 0 and tape.gradient(out, []) == []
    text = flat(explain(tape, out, model.trainable_variables))
    assert text.startswith("the sources are an empty "), text
    assert "create layers in __init__" in text
