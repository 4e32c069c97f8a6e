"""minitape.viz plots: checked as the data on the axes (matplotlib's Agg backend)."""

import matplotlib

matplotlib.use("Agg")

import matplotlib.pyplot as plt  # noqa: E402
import numpy as np  # noqa: E402
import pytest  # noqa: E402

import minitape as mt  # noqa: E402
from minitape.viz import (  # noqa: E402
    imshow_zero_center, plot_as_patches, plot_gradient, plot_jacobian,
)


@pytest.fixture(autouse=True)
def close_figures():
    yield
    plt.close("all")


def test_plot_gradient_sigmoid_and_its_derivative_001():
    x = np.linspace(-10.0, 10.0, 201)
    ax = plot_gradient(mt.nn.sigmoid, mt.linspace(-10.0, 10.0, 201))
    y_line, dy_line = ax.get_lines()
    assert (y_line.get_label(), dy_line.get_label()) == ("y", "dy/dx")
    s = 1 / (1 + np.exp(-x))                                     # closed forms in float64
    np.testing.assert_allclose(y_line.get_xdata(), x, atol=1e-5)
    np.testing.assert_allclose(y_line.get_ydata(), s, atol=1e-6)
    np.testing.assert_allclose(dy_line.get_ydata(), s * (1 - s), atol=1e-6)
    assert ax.get_xlabel() == "x" and ax.get_legend() is not None


def test_plot_gradient_of_a_lambda_on_a_list():
    ax = plot_gradient(lambda t: t**3, [0.0, 1.0, 2.0], label="f")
    assert [line.get_label() for line in ax.get_lines()] == ["f", "df/dx"]
    np.testing.assert_allclose(ax.get_lines()[1].get_ydata(), [0.0, 3.0, 12.0])
    with pytest.raises(ValueError, match="1-D"):
        plot_gradient(mt.math.sin, [[1.0, 2.0]])


def test_imshow_zero_center_is_symmetric_with_a_colour_bar():
    m = np.array([[1.0, -3.0], [2.0, 0.5]])
    ax = imshow_zero_center(m)
    (im,) = ax.get_images()
    np.testing.assert_array_equal(im.get_array(), m)
    assert im.get_clim() == (-3.0, 3.0) and im.get_cmap().name == "seismic"
    assert len(ax.figure.axes) == 2                       # the image and its colour bar
    ax = imshow_zero_center(mt.constant(m), cmap="RdBu")
    assert ax.get_images()[0].get_cmap().name == "RdBu"


def test_plot_as_patches_matches_the_guides_layout_003():
    rng = np.random.default_rng(0)
    b, outs, ins = 3, 2, 4
    j = np.zeros((b, outs, b, ins))
    for k in range(b):
        j[k, :, k, :] = rng.normal(size=(outs, ins))     # independent batch entries
    ax = plot_as_patches(j)
    image = np.asarray(ax.get_images()[0].get_array())
    # One patch row per output, one patch column per input; each patch is (b + 2, b + 2).
    assert image.shape == (outs * (b + 2), ins * (b + 2))
    lim = np.abs(j).max()
    for o in range(outs):
        for i in range(ins):
            patch = image[o * (b + 2):(o + 1) * (b + 2), i * (b + 2):(i + 1) * (b + 2)]
            np.testing.assert_allclose(patch[1:-1, 1:-1], j[:, o, :, i])
            assert np.all(patch[0] == -lim) and np.all(patch[:, 0] == -lim)
    assert ax.get_images()[0].get_extent() == [-0.5, ins - 0.5, outs - 0.5, -0.5]
    assert ax.get_xlabel() and ax.get_ylabel()
    with pytest.raises(ValueError, match="batch, out, batch, in"):
        plot_as_patches(np.zeros((2, 2)))


def test_plot_jacobian_of_a_tape_jacobian():
    x = mt.Variable([1.0, 2.0, 3.0])
    with mt.GradientTape() as tape:
        y = mt.stack([x[0] * x[1], mt.math.sin(x[2])])
    j = tape.jacobian(y, x)
    ax = plot_jacobian(j)
    expected = np.array([[2.0, 1.0, 0.0], [0.0, 0.0, np.cos(3.0)]])      # by hand
    np.testing.assert_allclose(np.asarray(ax.get_images()[0].get_array()), expected, rtol=1e-6)
    assert "target" in ax.get_ylabel() and "source" in ax.get_xlabel()
    assert len(ax.figure.axes) == 2
    j4 = np.arange(2 * 3 * 2 * 5, dtype=float).reshape(2, 3, 2, 5)
    image = np.asarray(plot_jacobian(j4).get_images()[0].get_array())
    np.testing.assert_array_equal(image, j4.reshape(6, 10))


def test_every_figure_has_a_title_axis_labels_and_a_labelled_colour_bar():
    import matplotlib
    matplotlib.use("Agg")
    from minitape.viz import imshow_zero_center, plot_as_patches, plot_gradient, plot_jacobian
    axes = [plot_gradient(mt.math.sin, mt.linspace(-1.0, 1.0, 5)),
            imshow_zero_center(np.eye(3) - 0.5, quantity="d2y/dx2"),
            plot_as_patches(np.ones((2, 3, 2, 4))), plot_jacobian(np.ones((3, 2)))]
    for ax in axes:
        assert ax.get_title() and ax.get_xlabel() and ax.get_ylabel()
    for ax in axes[1:]:
        bar = ax.images[0].colorbar
        assert bar is not None and bar.ax.get_ylabel()
    assert axes[1].images[0].colorbar.ax.get_ylabel().startswith("d2y/dx2")


def test_the_timeline_and_the_explorers_label_both_axes():
    from minitape.viz import DescentExplorer, JacobianExplorer, timeline
    x = mt.Variable(2.0)
    with mt.GradientTape() as tape:
        y = x * x
    tape.gradient(y, x)
    figures = [timeline(tape),
               JacobianExplorer(lambda v: mt.math.sin(v), mt.linspace(0.0, 1.0, 3),
                                repeat=0).figure(),
               DescentExplorer(lambda p: p[0] ** 2 + p[1] ** 2, [1.0, 1.0], steps=2,
                               resolution=5, arrows=3).figure()]
    for fig in figures:
        plots = [ax for ax in fig.axes if ax.get_label() != "<colorbar>"]
        assert plots
        for ax in plots:
            assert ax.get_xlabel() and ax.get_ylabel(), fig
