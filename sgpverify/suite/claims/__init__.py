"""The suite's claims, in report order: one :class:`~sgpverify.suite.Claim` record each.

Each family module pairs its checks with their records (statement, experiments,
statistic, criterion fixed in advance, negative control). :data:`CLAIMS` is the
one place that orders them; adding a claim adds one line here. A user's claims
(:mod:`sgpverify.declare`, ``verify --claims FILE.py``) join them through
:func:`register`, after the built-in ones, and take the same path.
"""

from __future__ import annotations

import runpy
from typing import Any

from ..experiments import EXPERIMENTS
from . import bounds, comparisons, conservation, delays, exponents, problem, schedules, worstcase

__all__ = ["CLAIMS", "CHECK_NAMES", "CRITERIA", "BY_NAME", "register", "unregister", "load_file", "load_files"]

CLAIMS = [
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
]

#: The names of the checks, in report order (the built-in ones, then the registered ones).
CHECK_NAMES = [c.name for c in CLAIMS]
#: How each verdict is decided (fixed a priori; printed in the report).
CRITERIA = {c.name: c.criterion for c in CLAIMS}
#: The claims by name.
BY_NAME = {c.name: c for c in CLAIMS}


def register(claim: Any, experiment: Any) -> None:
    """Add ``claim`` (a :class:`~sgpverify.suite.Claim`) and its ``experiment`` row after the others."""
    if claim.name in BY_NAME:
        raise ValueError(f"claim name {claim.name!r} is taken: choose another name")
    if experiment.key in EXPERIMENTS:
        raise ValueError(f"experiment {experiment.key!r} is taken")
    EXPERIMENTS[experiment.key] = experiment
    CLAIMS.append(claim)
    CHECK_NAMES.append(claim.name)
    CRITERIA[claim.name] = claim.criterion
    BY_NAME[claim.name] = claim


def unregister(name: str, key: str) -> None:
    """Remove the claim ``name`` and its experiment ``key`` (none of the built-in ones)."""
    if name in _BUILT_IN:
        raise ValueError(f"claim {name!r} is a built-in check of the suite: it cannot be removed")
    for seq in (CLAIMS, CHECK_NAMES):
        seq[:] = [c for c in seq if getattr(c, "name", c) != name]
    CRITERIA.pop(name, None)
    BY_NAME.pop(name, None)
    EXPERIMENTS.pop(key, None)


_BUILT_IN = frozenset(CHECK_NAMES)


def load_file(path: str) -> list:
    """Run a claims file and register its ``CLAIMS`` (objects with ``register(source=)``, as
    :class:`sgpverify.declare.Claim`); returns them. A claim already registered from this file is
    kept (a worker process of the suite loads the file once). Errors name the file."""
    try:
        ns = runpy.run_path(str(path), run_name="__sgpverify_claims__")
    except FileNotFoundError:
        raise ValueError(f"--claims file {path} does not exist") from None
    except Exception as exc:
        raise ValueError(f"--claims file {path} could not be loaded: {type(exc).__name__}: {exc}") from exc
    got = ns.get("CLAIMS")
    if not isinstance(got, (list, tuple)) or not got:
        raise ValueError(f"--claims file {path} must define CLAIMS, a non-empty list of declare.Claim, got {got!r}")
    for c in got:
        if not callable(getattr(c, "register", None)):
            raise ValueError(f"--claims file {path}: CLAIMS must hold declare.Claim objects, got {c!r}")
    names = [c.name for c in got]
    dup = sorted({nm for nm in names if names.count(nm) > 1})
    if dup:
        raise ValueError(f"--claims file {path}: claim name {dup[0]!r} is declared twice")
    for c in got:
        row = EXPERIMENTS.get(c.key)
        if row is not None and getattr(row, "source", None) == str(path):
            continue
        c.register(source=str(path))
    return list(got)


def load_files(paths: list[str] | tuple[str, ...], only: list[str] | None = None) -> None:
    """Register the claims of every file of ``paths`` (``verify --claims``), then check that each name
    of ``only`` is a check (built in or declared). Errors name the file or the name (ValueError)."""
    for path in paths:
        load_file(path)
    for name in only or ():
        if name not in CHECK_NAMES:
            raise ValueError(f"--only must name a check ({', '.join(CHECK_NAMES)}), got {name!r}")
