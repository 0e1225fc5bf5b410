"""Figures of the verification suite, in one style (matplotlib, Agg backend).

:mod:`~sgpverify.plots.figures` draws the report figures from the raw results of
:mod:`sgpverify.suite` experiments (one PNG each: measured curves with their Monte-Carlo
spread and the predicted bound or rate drawn over them); :mod:`~sgpverify.plots.axes` draws
onto matplotlib Axes from a :class:`~sgpverify.engine.Trace` or rate measurements
(:func:`plot_trace`, :func:`plot_rate`); :mod:`~sgpverify.plots.style` holds the one style.
"""

from __future__ import annotations

from .axes import TRACE_SERIES, plot_rate, plot_trace
from .figures import FIGURES, NEEDS, USES, render, render_all
from .style import mean_ci, pyplot, save, topology_style

__all__ = [
    "plot_trace",
    "plot_rate",
    "TRACE_SERIES",
    "render_all",
    "render",
    "pyplot",
    "FIGURES",
    "USES",
    "NEEDS",
    "mean_ci",
    "save",
    "topology_style",
]
