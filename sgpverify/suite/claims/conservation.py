"""The claim of mass conservation: push-sum keeps the average, to round-off, in every run."""

from __future__ import annotations

import math
from typing import TYPE_CHECKING, Any

from ..experiments import EXPERIMENTS
from ..records import Claim, make_control

if TYPE_CHECKING:
    from ..config import SuiteConfig

__all__ = ["MASS_CONSERVATION", "RECORDED", "all_runs", "check_mass"]


#: The experiments with run records, in run order: mass conservation reads every one of them.
RECORDED = tuple(key for key, exp in EXPERIMENTS.items() if exp.runs is not None)


def all_runs(data: dict) -> list:
    """Every run record of the data (of the experiments in :data:`RECORDED` that ran)."""
    out = []
    for key in RECORDED:
        got = data.get(key)
        if got is not None and not (isinstance(got, dict) and "error" in got):  # nothing ran there
            out += EXPERIMENTS[key].runs(got)
    return out


def check_mass(cfg: SuiteConfig, data: dict[str, Any]) -> dict[str, Any]:
    """Mass and weight conservation (mass in flight included) to round-off, in every run."""
    runs = [r for r in all_runs(data) if r["algorithm"] == "sgp"]
    if not runs:
        return dict(
            verdict="inconclusive",
            measured="no SGP run",
            predicted="0 (round-off)",
            detail="no experiment that records runs ran (every one diverged or did not apply)",
        )
    values = [(r["mass_error"], r["mass_tol"], r["weight_error"], r["weight_tol"]) for r in runs]
    broken = sum(not (all(math.isfinite(v) for v in row) and row[1] > 0 and row[3] > 0) for row in values)
    if broken:
        return dict(
            verdict="inconclusive",
            measured=f"{broken} of {len(runs)} runs without a finite mass or weight error",
            predicted="0 (round-off)",
            detail="a measurement broke or a run diverged: the conservation error is not a finite number in "
            f"{broken} of {len(runs)} SGP runs",
        )
    me = max(r["mass_error"] / r["mass_tol"] for r in runs)
    we = max(r["weight_error"] / r["weight_tol"] for r in runs)
    worst = max(r["mass_error"] for r in runs)
    ok = me <= 1 and we <= 1
    return dict(
        verdict="pass" if ok else "fail",
        measured=f"mass {worst:.2e} (x{me:.2g} of tol), weight x{we:.2g} of tol",
        predicted="0 (round-off)",
        detail=f"{len(runs)} SGP runs; tolerance 64 eps K n scale per run, scale = 1 + the largest |x| or |z| "
        "the run carried",
        extra={"slack": max(me, we)},
    )


MASS_CONSERVATION = Claim(
    "mass-conservation",
    "push-sum: xbar^{k+1} = xbar^k - (gamma/n) sum_i g_i (mass in flight included); weights sum to n",
    RECORDED,
    "max mass and weight error over every SGP run, over 64 eps K n scale",
    "pass iff every mass and weight error is within 64 eps K n scale (round-off)",
    make_control(
        "message-loss",
        "0.1% of messages lost in flight (the sender does not keep the share)",
        ("rates",),
        loss=0.001,
    ),
    check_mass,
)
