"""The suite's claims, in report order: one :class:`~sgpverify.suite.Claim` record each.

Each family module pairs its checks with their records (statement, experiments,
statistic, criterion fixed in advance, negative control). :data:`CLAIMS` is the
one place that orders them; adding a claim adds one line here.
"""

from __future__ import annotations

from . import bounds, comparisons, conservation, delays, exponents, problem, schedules, worstcase

__all__ = ["CLAIMS", "CHECK_NAMES", "CRITERIA", "BY_NAME"]

CLAIMS = (
    problem.DECLARED_CONSTANTS,
    exponents.STATIONARITY_RATE,
    exponents.CONSENSUS_RATE,
    exponents.LINEAR_SPEEDUP,
    bounds.THEOREM1_BOUND,
    bounds.DESCENT_INEQUALITY,
    bounds.CONSENSUS_BOUND,
    bounds.COMBINED_BOUND,
    worstcase.WORST_CASE,
    conservation.MASS_CONSERVATION,
    delays.DELAY_ROBUSTNESS,
    delays.DELAY_RATE,
    delays.DELAY_CONSENSUS,
    comparisons.TOPOLOGY_RATIO,
    comparisons.PEERS,
    comparisons.CONSENSUS_SCALING,
    exponents.ITERATION_COMPLEXITY,
    schedules.MIXING_CONSTANTS,
    comparisons.BASELINES,
)

CHECK_NAMES = tuple(c.name for c in CLAIMS)
#: How each verdict is decided (fixed a priori; printed in the report).
CRITERIA = {c.name: c.criterion for c in CLAIMS}
#: The claims by name.
BY_NAME = {c.name: c for c in CLAIMS}
