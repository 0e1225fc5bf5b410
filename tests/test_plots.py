"""The Axes plots (plot_trace, plot_rate) and the report figures' fixes (issue 20, item 4).

Each test draws with matplotlib (skipped without it) and reads the drawn artists back: line
data compared with values computed here independently of the plotting code."""

import math

import numpy as np
import pytest

import sgpverify
from sgpverify import graphs, problems, rates, theory

pytestmark = pytest.mark.needs_matplotlib


@pytest.fixture(scope="module")
def trace():
    prob = problems.by_name("quadratic-cosine", 6, 3, seed=1)
    return sgpverify.simulate(prob, graphs.random_peer(6, seed=2), step_size=0.02, n_iter=40, replicas=5, seed=3)


@pytest.fixture(autouse=True)
def _close():
    yield
    import matplotlib.pyplot as plt

    plt.close("all")


def _by_gid(ax, gid):
    return [ln for ln in ax.get_lines() if ln.get_gid() == gid]


def test_plot_trace_draws_one_panel_per_series_with_the_replica_means(trace):
    from sgpverify.plots import plot_trace

    axes = plot_trace(trace)
    assert len(axes) == 4
    assert [a.get_yscale() for a in axes] == ["log", "log", "linear", "log"]
    fields = {0: ["consensus"], 1: ["grad_norm_sq"], 2: ["value"], 3: ["weight_min", "weight_max"]}
    for i, a in enumerate(axes):
        for field in fields[i]:
            (line,) = _by_gid(a, f"mean:{field}")
            v = np.asarray(getattr(trace, field))
            assert v.shape[1] == 5
            mean = np.array([sum(row) / len(row) for row in v.tolist()])  # by hand, not np.mean
            np.testing.assert_allclose(line.get_ydata(), mean, rtol=1e-12)
            np.testing.assert_array_equal(line.get_xdata(), trace.iterations)
        assert a.get_xlabel() == "iteration k"
        assert "min-max band" in a.get_title()
    assert "\\frac{1}{n}\\sum_i" in axes[0].get_ylabel()


def test_plot_trace_subset_and_given_axes(trace):
    import matplotlib.pyplot as plt

    from sgpverify.plots import plot_trace

    fig, ax = plt.subplots()
    out = plot_trace(trace, series=("value",), ax=ax, band="quantile")
    assert out == [ax] and len(ax.collections) == 1  # the band
    with pytest.raises(ValueError, match="ax must hold one Axes per series"):
        plot_trace(trace, series=("value", "consensus"), ax=ax)


@pytest.mark.parametrize(
    "kwargs, match",
    [
        ({"series": ("consensus", "nonsense")}, "series must be among .*'nonsense'"),
        ({"series": ()}, "series must name at least one"),
        ({"band": "iqr"}, "band must be one of"),
    ],
)
def test_plot_trace_rejects_bad_arguments(trace, kwargs, match):
    from sgpverify.plots import plot_trace

    with pytest.raises(ValueError, match=match):
        plot_trace(trace, **kwargs)


def test_plot_trace_rejects_a_non_trace():
    from sgpverify.plots import plot_trace

    with pytest.raises(ValueError, match="trace must be a sgpverify Trace.*dict"):
        plot_trace({"consensus": [1.0]})


@pytest.fixture(scope="module")
def rate_data():
    K = 256.0 * 2 ** np.arange(5)
    y = K**-0.5 * (1 + 0.5 * K**-0.5) * np.exp(0.02 * np.random.default_rng(0).standard_normal((8, 5)))
    return K, y


def test_plot_rate_fitted_slope_is_test_exponents_exponent(rate_data):
    from sgpverify.plots import plot_rate

    K, y = rate_data
    a, a2 = plot_rate(K, y, predicted=-0.5, label="stationarity")
    t = rates.test_exponent(K, y, predicted=-0.5)
    (fit,) = _by_gid(a, "fitted")
    slopes = np.diff(np.log(fit.get_ydata())) / np.diff(np.log(fit.get_xdata()))
    np.testing.assert_allclose(slopes, t.exponent, rtol=1e-12)
    (pred,) = _by_gid(a, "predicted")
    np.testing.assert_allclose(np.diff(np.log(pred.get_ydata())) / np.diff(np.log(K)), -0.5, rtol=1e-12)
    # measured means: the replica mean, computed by hand
    meas = a.containers[0].lines[0]
    np.testing.assert_allclose(meas.get_ydata(), y.sum(axis=0) / y.shape[0], rtol=1e-12)
    # the band predicted +- delta on the slopes panel
    (band,) = [p for p in a2.patches if p.get_gid() == "band"]
    np.testing.assert_allclose([band.get_y(), band.get_y() + band.get_height()], [-0.55, -0.45], rtol=1e-12)
    (ex,) = _by_gid(a2, "exponent")
    np.testing.assert_allclose(ex.get_ydata(), t.exponent)


def test_plot_rate_accepts_an_exponent_test_and_one_axes(rate_data):
    import matplotlib.pyplot as plt

    from sgpverify.plots import plot_rate

    K, y = rate_data
    t = rates.test_exponent(K, y, predicted=-0.5, delta=0.1)
    none, a = plot_rate(t)
    assert none is None and _by_gid(a, "exponent")
    (band,) = [p for p in a.patches if p.get_gid() == "band"]
    np.testing.assert_allclose(band.get_height(), 0.2)
    with pytest.raises(ValueError, match="y must be None"):
        plot_rate(t, y)
    fig, ax = plt.subplots()
    a, inset = plot_rate(K, y, predicted=-0.5, ax=ax)
    assert a is ax and inset in ax.child_axes
    with pytest.raises(ValueError, match="y and predicted"):
        plot_rate(K, y)


# -- the report figures, drawn from a small data set shaped like the suite's ----------------


def _rates_data():
    rng = np.random.default_rng(0)
    Ks = [64, 128, 256, 512]
    data = {"rates": {"n": 4, "constants": {"L": 1.0, "sigma2": 1.0, "f_star": 0.0, "f_lower": -1.0}, "schedules": {}}}
    data["mixing"] = {"schedules": {}}
    for j, label in enumerate(["exponential", "ring-bidir"]):
        runs = []
        for K in Ks:
            g = math.sqrt(4 / K)
            noise = np.exp(0.01 * rng.standard_normal(6))
            runs.append(
                dict(
                    K=K,
                    gamma=g,
                    stationarity=(K**-0.5 * (1 + j) * noise).tolist(),
                    consensus=(0.5 / K * (1 + j) * noise).tolist(),
                    consensus_max=2.0 / K * (1 + j),
                    f0=[1.0] * 6,
                    fK=[0.5] * 6,
                    G2sq=2.0 + j,
                    weight_min=0.9 - 0.1 * j,
                )
            )
        data["rates"]["schedules"][label] = {"topology": label, "runs": runs}
        data["mixing"]["schedules"][label] = {"S2": 3.0 + j, "run_window_disconnected": None}
    return data


def _rgba(c):
    from matplotlib.colors import to_rgba

    return tuple(np.round(to_rgba(c), 6))


def _legend_matches_lines(ax):
    """Every drawn line is in the legend, and every legend entry with a line names a drawn line
    of the same colour."""
    from matplotlib.collections import LineCollection
    from matplotlib.lines import Line2D

    in_containers = {id(ln) for c in ax.containers for ln in c.get_children()}
    drawn = {}
    for ln in ax.get_lines():
        if id(ln) in in_containers:
            continue
        assert not ln.get_label().startswith("_"), f"a drawn line ({ln.get_color()}) is not in the legend"
        drawn.setdefault(ln.get_label(), set()).add(_rgba(ln.get_color()))
    for c in ax.containers:
        drawn.setdefault(c.get_label(), set()).add(_rgba(c.lines[0].get_color()))
    leg = ax.get_legend()
    checked = 0
    for h, t in zip(leg.legend_handles, leg.get_texts()):
        if isinstance(h, Line2D):
            rgba = _rgba(h.get_color())
        elif isinstance(h, LineCollection):
            rgba = _rgba(h.get_color()[0])
        else:
            continue
        assert rgba in drawn.get(t.get_text(), set()), (t.get_text(), rgba, drawn.get(t.get_text()))
        checked += 1
    assert checked == len(drawn)


@pytest.fixture
def draw(monkeypatch, tmp_path):
    """Draw a report figure to a PNG and return its Figure (kept open)."""
    import matplotlib.pyplot as plt

    kept = []
    monkeypatch.setattr(plt, "close", lambda fig=None: kept.append(fig))

    def run(fn, data):
        fn(data, tmp_path / "f.png")
        assert (tmp_path / "f.png").stat().st_size > 0
        return kept[-1]

    return run


@pytest.mark.parametrize("name", ["stationarity_vs_K", "consensus_vs_K"])
def test_rate_figures_legends_match_every_drawn_line(draw, name):
    from sgpverify.plots import figures

    fig = draw(getattr(figures, name), _rates_data())
    ax = fig.axes[0]
    _legend_matches_lines(ax)
    # the two schedules are told apart by colour and by marker
    c0, c1 = ax.containers[:2]
    assert _rgba(c0.lines[0].get_color()) != _rgba(c1.lines[0].get_color())
    assert c0.lines[0].get_marker() != c1.lines[0].get_marker()


def test_consensus_figure_draws_the_b2_bound_and_defines_xi(draw):
    from sgpverify.plots import figures

    data = _rates_data()
    fig = draw(figures.consensus_vs_K, data)
    ax = fig.axes[0]
    r = data["rates"]["schedules"]["ring-bidir"]["runs"]
    expected = [(rr["gamma"] * 4.0 * math.sqrt(3.0) / 0.8) ** 2 for rr in r]  # (gamma S2 G2 / delta)^2 by hand
    assert theory.evaluate(theory.CONSENSUS_BOUND_L2, gamma=r[0]["gamma"], S2=4.0, G2=math.sqrt(3.0), delta=0.8) == (
        pytest.approx(expected[0], rel=1e-12)
    )
    hits = [
        ln
        for ln in ax.get_lines()
        if ln.get_ydata().shape == (4,) and np.allclose(ln.get_ydata(), expected, rtol=1e-12)
    ]
    assert len(hits) == 1 and "b2" in hits[0].get_label()
    assert "\\Xi^k = \\frac{1}{n}" in ax.get_title()


def test_speedup_ticks_are_the_n_values(draw):
    from sgpverify.plots import figures

    rng = np.random.default_rng(1)
    runs = [
        dict(K=K, n=n, stationarity=(np.sqrt(1 / (n * K)) * np.exp(0.01 * rng.standard_normal(4))).tolist())
        for K in (128, 256)
        for n in (4, 8, 16, 32)
    ]
    data = {"speedup": {"Ks": [128, 256], "ns": [4, 8, 16, 32], "schedules": {"exponential": {"runs": runs}}}}
    fig = draw(figures.speedup_vs_n, data)
    ax = fig.axes[0]
    assert list(ax.get_xticks()) == [4, 8, 16, 32]
    assert [t.get_text() for t in ax.get_xticklabels()] == ["4", "8", "16", "32"]
    assert not ax.xaxis.get_minor_ticks() or all(not t.label1.get_text() for t in ax.xaxis.get_minor_ticks())
    assert ax.get_legend().get_bbox_to_anchor().x0 >= ax.get_window_extent().x1 - 1  # outside, right of the axes


def test_pushsum_weights_draws_the_measured_floor(draw):
    from sgpverify.plots import figures

    data = {"weights": {"iterations": [0, 1, 2, 3], "weight_min": [1.0, 0.3, 0.05, 0.2], "weight_max": [1, 2, 3, 2]}}
    fig = draw(figures.pushsum_weights, data)
    (floor,) = [ln for ln in fig.axes[0].get_lines() if "floor" in ln.get_label()]
    np.testing.assert_array_equal(floor.get_ydata(), [0.05, 0.05])
    assert "0.05" in floor.get_label()


def test_mixing_figures_say_their_horizon(draw):
    from sgpverify.plots import figures

    fam = [dict(topology="ring(n=4)", n=4, q=0.5, q_theory_log10_gap=-3.0, horizon=123)]
    fig = draw(figures.graph_families, {"mixing": {"families": fam}})
    assert "horizon of 123 steps" in fig.axes[0].get_title()


def test_legend_below_clears_a_tall_x_label_after_layout(tmp_path):
    """The legend under the axes stays below the tick labels and a two-line mathtext x label
    once the figure is laid out and saved (seen overlapping on consensus_vs_K)."""
    from sgpverify.plots import style

    plt = style.pyplot()
    fig, ax = plt.subplots(figsize=(6, 4))
    for i in range(6):
        ax.plot([1, 2, 3], [i, i + 1, i + 2], label=f"line {i}: $\\max_k E\\,\\Xi^k$")
    ax.set_xlabel("$K_{mid}^{-1/2}$ (0 = the limit $K \\to \\infty$)\nsecond line")
    legend = style.legend_below(ax)
    fig.tight_layout()  # as style.save does, before it writes the file
    fig.canvas.draw()
    renderer = fig.canvas.get_renderer()
    label = ax.xaxis.get_tightbbox(renderer)
    box = legend.get_window_extent(renderer)
    assert box.y1 <= label.y0, (box, label)
    # and the control: the fixed axes-fraction offset it replaced overlaps here
    fig2, ax2 = plt.subplots(figsize=(6, 4))
    for i in range(6):
        ax2.plot([1, 2, 3], [i, i + 1, i + 2], label=f"line {i}: $\\max_k E\\,\\Xi^k$")
    ax2.set_xlabel("$K_{mid}^{-1/2}$ (0 = the limit $K \\to \\infty$)\nsecond line")
    old = ax2.legend(loc="upper center", bbox_to_anchor=(0.5, -0.2))
    fig2.tight_layout()
    fig2.canvas.draw()
    r2 = fig2.canvas.get_renderer()
    assert old.get_window_extent(r2).y1 > ax2.xaxis.get_tightbbox(r2).y0


def test_straggler_figure_draws_the_target_and_each_time_to_target(tmp_path, monkeypatch):
    """stragglers.png: one curve of ||grad f(xbar(t))||^2 per algorithm, the target line at the
    study's target, and a marker at each reached time to target (none for one never reached)."""
    import matplotlib.figure

    from sgpverify.cli import commands

    t = np.linspace(0.0, 3.0, 31)
    res = {
        "target": 0.05,
        "rows": [
            {"algorithm": "allreduce", "time_to_target": None},
            {"algorithm": "sgp", "time_to_target": 1.2},
        ],
        "grad_curves": {
            "allreduce": (t.tolist(), (1.0 + 0 * t).tolist()),
            "sgp": (t.tolist(), np.exp(-3 * t).tolist()),
        },
    }
    seen = {}
    real_save = matplotlib.figure.Figure.savefig

    def keep(fig, *args, **kwargs):
        seen["fig"] = fig
        return real_save(fig, *args, **kwargs)

    monkeypatch.setattr(matplotlib.figure.Figure, "savefig", keep)
    path = commands._straggler_figure(res, tmp_path)
    assert path.is_file()
    [ax] = seen["fig"].axes
    labels = [h.get_label() for h in ax.get_legend().legend_handles]
    assert labels == ["allreduce (not reached)", "sgp (1.20 s to target)", "target 0.05"]
    horizontal = [ln for ln in ax.lines if list(ln.get_ydata()) == [0.05, 0.05]]
    vertical = [ln for ln in ax.lines if list(ln.get_xdata()) == [1.2, 1.2]]
    assert len(horizontal) == 1 and len(vertical) == 1
