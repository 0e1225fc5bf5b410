"""Plots onto matplotlib Axes, returned to the caller (like seaborn or networkx): a
:class:`~sgpverify.engine.Trace` (:func:`plot_trace`) and a measured rate against its
prediction (:func:`plot_rate`)."""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

import numpy as np

from ..engine import Trace
from ..rates import ExponentTest, test_exponent
from .style import mean_ci, pyplot

if TYPE_CHECKING:
    from collections.abc import Sequence

    from numpy.typing import ArrayLike

__all__ = ["plot_trace", "plot_rate", "TRACE_SERIES"]

#: The series :func:`plot_trace` draws: name -> (the Trace fields, y label, title, log y).
TRACE_SERIES = {
    "consensus": (
        ("consensus",),
        "$\\Xi^k = \\frac{1}{n}\\sum_i \\|z_i^k - \\bar x^k\\|^2$",
        "Consensus distance",
        True,
    ),
    "grad_norm_sq": (("grad_norm_sq",), "$\\|\\nabla f(\\bar x^k)\\|^2$", "Squared gradient norm at the average", True),
    "value": (("value",), "$f(\\bar x^k)$", "Objective at the average", False),
    "weights": (("weight_min", "weight_max"), "push-sum weight $w_i^k$", "Smallest and largest weight", True),
}
_BANDS = ("minmax", "quantile", None)


def _replica_summary(v: np.ndarray, band: str | None, quantiles: tuple[float, float]):
    """Mean over replicas (axis 1 of a (T, R) series) and the band's lower and upper edges."""
    if v.ndim == 1:
        return v, None, None
    m = v.mean(axis=1)
    if band == "minmax":
        return m, v.min(axis=1), v.max(axis=1)
    if band == "quantile":
        lo, hi = np.quantile(v, quantiles, axis=1)
        return m, lo, hi
    return m, None, None


def plot_trace(
    trace: Trace,
    *,
    series: Sequence[str] = ("consensus", "grad_norm_sq", "value", "weights"),
    ax: Any = None,
    band: str | None = "minmax",
    quantiles: tuple[float, float] = (0.1, 0.9),
    label: str | None = None,
    color: str | None = None,
) -> list[Any]:
    """Draw the recorded series of a simulation, one panel per series, against the iteration k.

    With replicas (series of shape ``(T, R)``) each panel shows the mean over replicas (a line)
    and a shaded band: by default from the smallest to the largest replica (``band="minmax"``),
    or between two quantiles over replicas (``band="quantile"``). A single run has no band.

    Parameters
    ----------
    trace : Trace
        The result of :func:`sgpverify.simulate`.
    series : sequence of str
        Panels, in order, among ``"consensus"`` (``Xi^k = (1/n) sum_i ||z_i^k - xbar^k||^2``,
        log scale), ``"grad_norm_sq"`` (``||grad f(xbar^k)||^2``, log scale), ``"value"``
        (``f(xbar^k)``, linear scale) and ``"weights"`` (the smallest and the largest
        push-sum weight over the nodes, log scale).
    ax : matplotlib Axes or sequence of Axes, optional
        Where to draw: one Axes per series (a single Axes for a single series). None: a new
        figure with the panels side by side.
    band : {"minmax", "quantile", None}
        The band over replicas; None: none.
    quantiles : (float, float)
        The band's quantiles with ``band="quantile"``.
    label : str, optional
        Legend label of the lines (``weights`` adds ``min``/``max``).
    color : str, optional
        Line colour (``weights``: the colour of the smallest weight; the largest is dashed).

    Returns
    -------
    list of matplotlib Axes
        One per series, in order.

    Raises
    ------
    ValueError
        ``trace`` is not a :class:`~sgpverify.engine.Trace`, a name of ``series`` is unknown
        or ``series`` is empty, ``band`` is unknown, or ``ax`` holds a different number of
        Axes than ``series``.

    Examples
    --------
    >>> import sgpverify
    >>> from sgpverify import graphs, problems
    >>> prob = problems.by_name("quadratic-cosine", 8, 4)
    >>> tr = sgpverify.simulate(prob, graphs.random_peer(8, seed=0), step_size=0.1, n_iter=50, replicas=4)
    >>> axes = plot_trace(tr, series=("consensus", "weights"))  # doctest: +SKIP
    >>> len(axes)  # doctest: +SKIP
    2
    """
    if not isinstance(trace, Trace):
        raise ValueError(f"trace must be a sgpverify Trace (the result of simulate), got {type(trace).__name__}")
    if isinstance(series, str):
        series = (series,)
    series = tuple(series)
    if not series:
        raise ValueError(f"series must name at least one of {', '.join(TRACE_SERIES)}, got none")
    unknown = [s for s in series if s not in TRACE_SERIES]
    if unknown:
        raise ValueError(f"series must be among {', '.join(TRACE_SERIES)}, got {unknown[0]!r}")
    if band not in _BANDS:
        raise ValueError(f"band must be one of 'minmax', 'quantile' or None, got {band!r}")
    if ax is None:
        plt = pyplot()
        _, axs = plt.subplots(1, len(series), figsize=(5.2 * len(series), 4.4), squeeze=False)
        axes = list(axs[0])
    else:
        axes = list(ax) if isinstance(ax, (list, tuple, np.ndarray)) else [ax]
        if len(axes) != len(series):
            raise ValueError(f"ax must hold one Axes per series ({len(series)}), got {len(axes)}")
    k = np.asarray(trace.iterations)
    for a, name in zip(axes, series):
        fields, ylabel, title, logy = TRACE_SERIES[name]
        for j, field in enumerate(fields):
            v = np.asarray(getattr(trace, field), dtype=float)
            m, lo, hi = _replica_summary(v, band, quantiles)
            lab = label
            if len(fields) > 1:
                lab = f"{label + ': ' if label else ''}{field.split('_')[1]}"
            (line,) = a.plot(k, m, color=color, ls="-" if j == 0 else "--", label=lab, gid=f"mean:{field}")
            if lo is not None:
                a.fill_between(k, lo, hi, color=line.get_color(), alpha=0.2, lw=0, gid=f"band:{field}")
        what = {"minmax": "replica mean, min-max band", "quantile": f"replica mean, {quantiles} quantile band"}
        sub = f"\n({what[band]})" if trace.replicas > 1 and band else "\n(replica mean)" if trace.replicas > 1 else ""
        a.set(xlabel="iteration k", ylabel=ylabel, title=title + sub)
        if logy:
            a.set_yscale("log")
        if label or len(fields) > 1:
            a.legend()
    return axes


def _plain_ticks(a, x):
    """Ticks at the points ``x`` themselves, written as plain numbers (no minor ticks)."""
    a.set_xticks(x, [f"{v:.4g}" for v in x])
    a.minorticks_off()


def _slopes_panel(a, t: ExponentTest, color, label):
    """Local slopes with 95% intervals at x_mid, the extrapolated exponent, and the band."""
    xm = np.asarray(t.x_mid, float)
    a.axhspan(
        t.predicted - t.delta,
        t.predicted + t.delta,
        color="gray",
        alpha=0.15,
        gid="band",
        label=f"predicted {t.predicted:g} $\\pm$ {t.delta:g}",
    )
    eb = a.errorbar(
        xm,
        t.local_slopes,
        yerr=1.96 * np.asarray(t.local_slopes_se),
        fmt="o",
        capsize=3,
        color=color,
        label=f"{label + ': ' if label else ''}local slopes (95% CI)",
    )
    a.axhline(
        t.exponent,
        color=eb.lines[0].get_color(),
        ls=":",
        gid="exponent",
        label=f"extrapolated {t.exponent:.3f} [{t.ci_low:.3f}, {t.ci_high:.3f}]: {t.verdict}",
    )
    a.set(xscale="log", xlabel="x (geometric midpoint)", ylabel="local slope", title="Local slopes")
    a.legend()


def plot_rate(
    x: ArrayLike | ExponentTest,
    y: ArrayLike | None = None,
    *,
    predicted: float | None = None,
    ax: Any = None,
    label: str | None = None,
    delta: float = 0.05,
    omega: float = 0.5,
    correction: float | None = 0.5,
    color: str | None = None,
) -> tuple[Any, Any]:
    """Draw measured values against x with their fitted and predicted power law, and the local slopes.

    The values panel (log-log) shows the mean over replicas with 95% intervals (1.96 standard
    errors), the fitted rate (a line of slope :func:`~sgpverify.rates.test_exponent`'s
    extrapolated exponent) and the predicted rate (a line of slope ``predicted``), both through
    the geometric mean of the measured means. The slopes panel shows the local slopes with
    their 95% intervals, the extrapolated exponent and the band ``predicted +- delta`` that
    counts as agreement.

    Parameters
    ----------
    x : array_like, shape (m,), or ExponentTest
        Increasing positive abscissae (K or n); or the result of
        :func:`~sgpverify.rates.test_exponent`, then only the slopes panel is drawn.
    y : array_like, shape (R, m)
        Positive measurements, one row per replica (R >= 2); None with an ExponentTest.
    predicted : float
        The predicted exponent (taken from an ExponentTest).
    ax : matplotlib Axes, pair of Axes, optional
        A pair (values, slopes); a single Axes: the values there and the slopes in an inset
        (for an ExponentTest, the slopes there); None: a new figure with both side by side.
    label : str, optional
        Legend label of the measurements.
    delta, omega, correction : float
        Passed to :func:`~sgpverify.rates.test_exponent` (band half-width, correction
        exponent, admissible correction).
    color : str, optional
        Colour of the measurements.

    Returns
    -------
    (values Axes, slopes Axes)
        The values Axes is None for an ExponentTest.

    Raises
    ------
    ValueError
        An ExponentTest with ``y``; values without ``y`` or ``predicted``; as
        :func:`~sgpverify.rates.test_exponent` for bad ``x`` or ``y``.

    Examples
    --------
    >>> import numpy as np
    >>> K = 256.0 * 2 ** np.arange(5)
    >>> y = K**-0.5 * np.exp(0.01 * np.random.default_rng(0).standard_normal((8, 5)))
    >>> values_ax, slopes_ax = plot_rate(K, y, predicted=-0.5, label="stationarity")  # doctest: +SKIP
    """
    if isinstance(x, ExponentTest):
        if y is not None:
            raise ValueError("y must be None when x is an ExponentTest (it holds the slopes already)")
        if ax is None:
            _, ax = pyplot().subplots()
        _slopes_panel(ax, x, color, label)
        return None, ax
    if y is None or predicted is None:
        raise ValueError(f"y and predicted are needed with values x (got y={y!r:.20}, predicted={predicted!r})")
    X = np.asarray(x, dtype=float)
    Y = np.asarray(y, dtype=float)
    t = test_exponent(X, Y, predicted=predicted, delta=delta, omega=omega, correction=correction)
    if ax is None:
        _, (a, a2) = pyplot().subplots(1, 2, figsize=(11, 4.4))
    elif isinstance(ax, (list, tuple, np.ndarray)):
        if len(ax) != 2:
            raise ValueError(f"ax must be one Axes or a pair (values, slopes), got {len(ax)} Axes")
        a, a2 = ax
    else:
        a, a2 = ax, ax.inset_axes([0.58, 0.58, 0.4, 0.38])
    m, ci = mean_ci(Y, axis=0)
    eb = a.errorbar(
        X, m, yerr=ci, fmt="o", capsize=3, color=color, gid="measured", label=f"{label or 'measured'}: mean (95% CI)"
    )
    c = eb.lines[0].get_color()
    lx0, ly0 = float(np.mean(np.log(X))), float(np.mean(np.log(m)))
    a.plot(
        X,
        np.exp(ly0 + t.exponent * (np.log(X) - lx0)),
        "-",
        color=c,
        gid="fitted",
        label=f"fitted slope {t.exponent:.3f} [{t.ci_low:.3f}, {t.ci_high:.3f}]",
    )
    a.plot(
        X,
        np.exp(ly0 + predicted * (np.log(X) - lx0)),
        "--",
        color="gray",
        gid="predicted",
        label=f"predicted slope {predicted:g}",
    )
    a.set(
        xscale="log", yscale="log", xlabel="x", ylabel="measured (replica mean)", title=f"Rate: {t.verdict} ({t.rule})"
    )
    a.legend(loc="lower left")
    _plain_ticks(a, X)
    _slopes_panel(a2, t, c, label)
    _plain_ticks(a2, np.asarray(t.x_mid, float))
    return a, a2
