"""Numerical checks of the mixing assumptions of the SGP analysis.

:func:`check_mixing` measures, over a finite horizon, every quantity that the
analysis assumes of the mixing matrices ``P^(k)`` (docs/theory.md: (A3)-(A5) of section 1 and section 1b,
"Connectivity and products of mixing matrices"):
column-stochasticity, non-negativity, positive self-weights, the window length
B of strong connectivity and the diameter Delta of the window unions, the
contraction constants C and q of the products ``P^(k:s)``, and the push-sum
weight floor. It also evaluates the published Nedic-Olshevsky constants for the
same n and B so that users see how loose they are.

The rate of the products is obtained three ways (docs/constants.md):
:func:`exact_rate` (periodic schedules: the period product's spectral radius
on the disagreement subspace, to the power 1/period), :func:`lyapunov_rate`
(every schedule: top Lyapunov exponent, with a 95% interval) and the old
log-linear fit (:func:`fit_contraction`, kept as ``q_fit``). The envelope
``(C, q)`` reported takes ``q`` at least the exact rate (or the Lyapunov upper
end) and validates ``C q^t`` against the deviations until round-off
(:func:`envelope`, :func:`validate_envelope`). :func:`effective_step`,
:func:`weight_floor_ok`, :func:`rate_bound_valid`, :func:`theorem1_threshold`
and :func:`nedic_olshevsky_constants` turn the constants into the checks of
the analysis, each with a negative control in the tests.

All values are measured on the schedule at hand; nothing is assumed.

The submodules, by idea: :mod:`.connectivity` (B, diameter),
:mod:`.contraction` (deviations of the products, fit, envelope),
:mod:`.rates` (exact and Lyapunov rates, rate bounds), :mod:`.constants`
(Nedic-Olshevsky, Theorem 1's threshold, step and weight checks),
:mod:`.report` (:class:`MixingReport`), :mod:`.check` (:func:`check_mixing`
and its memory budgets) and :mod:`.table` (:func:`constants_table`).
"""

from __future__ import annotations

# The public names of the former single module, re-exported from their submodules;
# those marked noqa are public here too, though outside __all__. The byte budgets
# are read by check_mixing in .check at call time: set them there, not here.
from .check import (
    CONTRACTION_BLOCK_BYTES,  # noqa: F401
    EDGE_CACHE_BYTES,  # noqa: F401
    MATRIX_CACHE_BYTES,  # noqa: F401
    check_mixing,
    default_columns,  # noqa: F401
    run_connectivity,
)
from .connectivity import (
    EXACT_DIAMETER_MAX,  # noqa: F401
    diameter,
    diameter_bounds,  # noqa: F401
    find_B,
    first_disconnected_window,
)
from .constants import (
    NEDIC_OLSHEVSKY_HYPOTHESES,
    EffectiveStep,
    NedicOlshevsky,
    Threshold,
    effective_step,
    nedic_olshevsky_constants,
    nedic_olshevsky_hypotheses,
    theorem1_threshold,
    theory_constants,  # noqa: F401
    weight_floor_ok,
)
from .contraction import (
    FIT_MARGIN,  # noqa: F401
    ROUND_OFF_FLOOR,  # noqa: F401
    contraction,
    deviation_series,
    envelope,
    fit_contraction,
    validate_envelope,
)
from .rates import (
    EXACT_DENSE_MAX,  # noqa: F401
    ExactRate,
    LyapunovRate,
    exact_rate,
    log10_gap,
    lyapunov_rate,
    rate_bound_valid,
)
from .report import (
    MixingReport,
    format_report,  # noqa: F401
)
from .table import (
    CONSTANTS_FAMILIES,
    constants_table,
    format_constants_table,
)

__all__ = [
    "MixingReport",
    "check_mixing",
    "run_connectivity",
    "find_B",
    "first_disconnected_window",
    "diameter",
    "contraction",
    "deviation_series",
    "fit_contraction",
    "LyapunovRate",
    "lyapunov_rate",
    "ExactRate",
    "exact_rate",
    "envelope",
    "validate_envelope",
    "rate_bound_valid",
    "EffectiveStep",
    "effective_step",
    "weight_floor_ok",
    "Threshold",
    "theorem1_threshold",
    "NedicOlshevsky",
    "nedic_olshevsky_constants",
    "nedic_olshevsky_hypotheses",
    "log10_gap",
    "NEDIC_OLSHEVSKY_HYPOTHESES",
    "CONSTANTS_FAMILIES",
    "constants_table",
    "format_constants_table",
]
