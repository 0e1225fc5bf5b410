"""The one style of every figure: the pyplot setup, font sizes, colours per topology, the
replica mean with its 95% interval, and saving.

Figures are drawn about 10-11 inches wide at 110 dpi and read at about 700 px: the fonts are
sized for that (text 12 pt, legends 10 pt).
"""

from __future__ import annotations

import math
import os
from typing import TYPE_CHECKING, Any

import numpy as np

if TYPE_CHECKING:
    from types import ModuleType

    from numpy.typing import ArrayLike

__all__ = ["pyplot", "mean_ci", "save", "topology_style", "legend_below", "LEGEND_SIZE", "SMALL_SIZE"]

#: Font size of legends (points); never smaller, so that a figure read at ~700 px stays legible.
LEGEND_SIZE = 10
#: Font size of annotations and tick labels of crowded axes (points).
SMALL_SIZE = 9

#: Colour, marker and line style of each topology family (the name before "(" of a label),
#: the same in every figure.
_FAMILIES = {
    "exponential": ("C0", "o", "-"),
    "exponential-irregular": ("C1", "s", "--"),
    "ring": ("C2", "^", "-."),
    "random-peer": ("C3", "D", ":"),
    "torus": ("C5", "P", "--"),
    "hypercube": ("C6", "X", "-."),
    "exponential-bidir": ("C7", "*", ":"),
    "ring-bidir": ("C8", "h", "-"),
    "erdos-renyi": ("C9", "p", "--"),
    "exponential, 2 peers": ("C4", "v", "--"),
}
_OTHER = (("k", "h", "-"), ("0.45", "p", "--"))


def legend_below(ax: Any, gap: float = 0.1, **kwargs: Any) -> Any:
    """A legend under the axes, below its tick labels and x label, whatever their height
    (a two-line mathtext label is taller than a fixed offset allows for).

    The offset is fixed in inches, not in axes fractions, so that it still clears the label
    after ``tight_layout`` shrinks the axes to make room for the legend.

    Parameters
    ----------
    ax : matplotlib.axes.Axes
        The axes, with its labels set.
    gap : float
        Space between the x label and the legend, in inches.
    **kwargs
        Passed to ``ax.legend``.

    Returns
    -------
    matplotlib.legend.Legend
    """
    from matplotlib.transforms import ScaledTranslation

    fig = ax.figure
    renderer = fig.canvas.get_renderer()
    axis = ax.xaxis.get_tightbbox(renderer)
    below = 0.0 if axis is None else (ax.get_window_extent(renderer).y0 - axis.y0) / fig.dpi
    shift = ScaledTranslation(0.0, -(below + gap), fig.dpi_scale_trans)
    return ax.legend(loc="upper center", bbox_to_anchor=(0.5, 0.0), bbox_transform=ax.transAxes + shift, **kwargs)


def pyplot() -> ModuleType:
    """``matplotlib.pyplot`` on the Agg backend, with the figures' house style applied.

    Returns
    -------
    module
        ``matplotlib.pyplot``.

    Examples
    --------
    >>> plt = pyplot()  # doctest: +SKIP
    >>> fig, ax = plt.subplots()  # doctest: +SKIP
    """
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    plt.rcParams.update(
        {
            "figure.figsize": (7.0, 4.6),
            "figure.dpi": 110,
            "axes.grid": True,
            "grid.alpha": 0.3,
            "axes.spines.top": False,
            "axes.spines.right": False,
            "font.size": 12,
            "axes.titlesize": 13,
            "axes.labelsize": 12,
            "xtick.labelsize": 11,
            "ytick.labelsize": 11,
            "legend.fontsize": LEGEND_SIZE,
            "legend.frameon": False,
            "lines.markersize": 6,
        }
    )
    return plt


def topology_style(label: str) -> dict[str, Any]:
    """Colour, marker and line style of a topology, the same in every figure.

    Parameters
    ----------
    label : str
        A topology or schedule label (``"exponential(n=16, peers=1)"``); the family is the
        name before ``"("``.

    Returns
    -------
    dict
        ``color``, ``marker`` and ``linestyle``, to pass to ``plot``/``errorbar``.

    Examples
    --------
    >>> topology_style("ring(n=8)")
    {'color': 'C2', 'marker': '^', 'linestyle': '-.'}
    """
    family = label.split("(")[0].strip()
    if family in _FAMILIES:
        c, m, ls = _FAMILIES[family]
    else:
        c, m, ls = _OTHER[sum(map(ord, family)) % len(_OTHER)]
    return {"color": c, "marker": m, "linestyle": ls}


def mean_ci(values: ArrayLike, axis: int = -1) -> tuple[np.ndarray, np.ndarray]:
    """The mean over replicas and the half-width of its normal 95% interval (1.96 standard errors).

    Parameters
    ----------
    values : array_like
        Measurements, replicas along ``axis``.
    axis : int
        The replica axis.

    Returns
    -------
    mean, half_width : ndarray
        Half-width 0 with a single replica.

    Examples
    --------
    >>> m, h = mean_ci([[1.0, 3.0], [2.0, 2.0]])
    >>> m.tolist(), h.tolist()
    ([2.0, 2.0], [1.96, 0.0])
    """
    v = np.asarray(values, dtype=float)
    m = v.mean(axis=axis)
    r = v.shape[axis]
    se = v.std(axis=axis, ddof=1) / math.sqrt(r) if r > 1 else np.zeros_like(m)
    return m, 1.96 * se


def save(fig: Any, path: str | os.PathLike[str]) -> str:
    """Lay out, write and close ``fig``; return ``str(path)``.

    Parameters
    ----------
    fig : matplotlib.figure.Figure
    path : str or path-like

    Returns
    -------
    str

    Examples
    --------
    >>> fig, ax = pyplot().subplots()  # doctest: +SKIP
    >>> save(fig, "out.png")  # doctest: +SKIP
    'out.png'
    """
    import matplotlib.pyplot as plt

    fig.tight_layout()
    fig.savefig(path, bbox_inches="tight")
    plt.close(fig)
    return str(path)
