"""Claims on upper bounds: Theorem 1, the descent inequality, the consensus and combined bounds."""

from __future__ import annotations

import math
from typing import TYPE_CHECKING, Any

import numpy as np
from scipy import stats

from ... import theory
from ..criteria import level
from ..records import Claim, make_control
from .common import all_finite, combine, fmt, mean_se, short_horizon

if TYPE_CHECKING:
    from ..config import SuiteConfig

__all__ = [
    "THEOREM1_BOUND",
    "DESCENT_INEQUALITY",
    "CONSENSUS_BOUND",
    "COMBINED_BOUND",
    "check_theorem1",
    "check_descent",
    "check_consensus_bound",
    "check_combined_bound",
    "consensus_bound_of",
    "consensus_bound_ratio",
]


def _delta_of(const, f0):
    fs = const.get("f_star")
    return (
        (f0 - fs, "f(xbar^0) - f*") if fs is not None else (f0 - const["f_lower"], "f(xbar^0) - f_lower (f* unknown)")
    )


def check_theorem1(cfg: SuiteConfig, data: dict[str, Any]) -> dict[str, Any]:
    """Theorem 1's bound where the (known part of the) threshold is reached."""
    th = data["theorem"]
    const = th["constants"]
    parts, verdicts, worst = [], [], None
    for label, e in th["schedules"].items():
        thr = e.get("threshold")
        no = e.get("threshold_no_log10")
        no_s = f"; with the Nedic-Olshevsky constants the threshold is 10^{no:.3g}" if no is not None else ""
        if thr is None:
            parts.append(f"{label}: no envelope (C, q) measured: outside what the suite can place{no_s}")
            verdicts.append("inconclusive")
            continue
        if e.get("disconnected") is not None:
            a, b = e["disconnected"]
            parts.append(
                f"{label}: the schedule is not strongly connected over steps [{a}, {b}), within the theorem's run "
                "(mixing-constants): Assumption 3 fails there, so the theorem does not apply"
            )
            verdicts.append("inconclusive")
            continue
        if e["run"] is None:
            fit_s = (
                f" (with the fitted pair C = {e['C_fit']:.3g}, q = {e['q_fit']:.3g} it would be "
                f"{e['threshold_fit']:.3g})"
                if e.get("threshold_fit")
                else ""
            )
            parts.append(
                f"{label}: outside the theorem's regime: threshold (known part) {thr:.3g} with the envelope "
                f"C = {e['C']:.3g}, q = {e['q']:.3g} exceeds the largest K run ({cfg.theorem_K_cap})"
                f"{fit_s}{no_s}"
            )
            verdicts.append("outside")
            continue
        r = e["run"]
        f0 = float(np.mean(r["f0"]))
        Delta, how = _delta_of(const, f0)
        bound = theory.evaluate(
            theory.PUBLISHED_BOUND, Delta=Delta, L=const["L"], sigma2=const["sigma2"], n=cfg.n, K=r["K"]
        )
        m, se = mean_se(r["stationarity"])
        if not (all_finite(m, bound, Delta) and bound > 0):
            parts.append(
                f"{label}: K = {r['K']}: the stationarity average ({m:.4g}) or the bound ({bound:.4g}) is "
                f"not a finite positive number (Delta = {how} = {Delta:.4g}): no ratio"
            )
            verdicts.append("inconclusive")
            continue
        ratio = m / bound
        upper = (
            (m + stats.t.ppf(level(), len(r["stationarity"]) - 1) * se) / bound if len(r["stationarity"]) > 1 else ratio
        )
        ok = ratio <= 1.0
        verdicts.append("pass" if ok else "fail")
        worst = ratio if worst is None else max(worst, ratio)
        parts.append(
            f"{label}: K = {r['K']} >= threshold (known part) {thr:.3g} from the envelope C = {e['C']:.3g}, "
            f"q = {e['q']:.3g}; measured {m:.4g} vs bound {bound:.4g}, slack factor measured/bound = "
            f"{ratio:.3g} (one-sided 95% upper {upper:.3g}); Delta = {how} = {Delta:.4g}{no_s}"
        )
    in_regime = [v for v in verdicts if v != "outside"]
    if not in_regime:
        verdict = "inconclusive"
        near = min(((e["threshold"], lab) for lab, e in th["schedules"].items() if e.get("threshold")), default=None)
        measured = "outside the theorem's regime on every schedule"
        if near is not None:
            e = th["schedules"][near[1]]
            measured = (
                f"outside the theorem's regime: needs K >= {near[0]:.2g} ({near[1].split('(')[0]}, threshold from "
                f"the envelope C = {e['C']:.3g}, q = {e['q']:.3g}; run up to {cfg.theorem_K_cap})"
            )
    else:
        verdict = combine(in_regime)
        measured = f"slack {worst:.3g}" if worst is not None else "n/a"
    return dict(
        verdict=verdict,
        measured=measured,
        predicted="<= 1 where K >= threshold",
        detail="; ".join(parts),
        extra={"slack": worst},
    )


THEOREM1_BOUND = Claim(
    "theorem1-bound",
    "Theorem 1: (1/K) sum E||grad f(xbar^k)||^2 <= 12 (f(xbar^0) - f* + L sigma^2/2)/sqrt(nK) for K above "
    "a threshold (known part max(n L^4 C^4 60^2/(1-q)^4, n))",
    ("theorem",),
    "measured / bound at K = max(threshold, K_max), Delta with the true f*",
    "pass iff measured/bound <= 1 on every schedule where a run reaches the threshold computed from the "
    "envelope (C, q) minimising it among envelopes valid over the horizon; inconclusive (outside the "
    "theorem's regime) where no run reaches it; fail iff > 1 where it applies",
    make_control(
        "biased-gradient",
        "a constant gradient bias of norm sigma (e.g. a biased compressor)",
        ("theorem",),
        bias=1.0,
    ),
    check_theorem1,
    uses=("L", "sigma2", "f_lower", "f_star", "bias"),
    bound=True,
)


def check_descent(cfg: SuiteConfig, data: dict[str, Any]) -> dict[str, Any]:
    """Descent inequality (a), run by run: E[LHS - RHS] <= 0 not rejected at 95%."""
    verdicts, parts, worst = [], [], -math.inf
    for r in data["descent"]["runs"]:
        diff = np.asarray(r["lhs"]) - np.asarray(r["rhs"])
        m, se = mean_se(diff)
        tq = stats.t.ppf(level(), len(diff) - 1)
        with np.errstate(divide="ignore", invalid="ignore"):
            rel = float(np.mean(r["lhs"]) / np.mean(r["rhs"]))
        if not (np.all(np.isfinite(diff)) and all_finite(r["gamma_L"])):
            verdicts.append("inconclusive")
            parts.append(f"{r['label']} K={r['K']}: the sides of the inequality are not finite in every replica")
            continue
        if r["gamma_L"] > 1:
            verdicts.append("inconclusive")
            note = " (gamma L > 1: outside the inequality's hypothesis)"
        else:
            verdicts.append("pass" if m - tq * se <= 0 else "fail")
            note = ""
        worst = max(worst, rel) if math.isfinite(rel) else worst
        inv_L = r["gamma"] / r["gamma_L"] if r["gamma_L"] else math.inf  # 1/L = gamma / (gamma L)
        parts.append(
            f"{r['label']} K={r['K']}: LHS/RHS = {rel:.3g} (gamma L = {r['gamma_L']:.2f}; weights down to "
            f"{r['weight_min']:.2g}, effective step gamma/w_min = {r['effective_step']:.3g} vs 1/L = "
            f"{inv_L:.3g}){note}"
        )
    return dict(
        verdict=combine(verdicts),
        measured=f"max LHS/RHS = {worst:.3g}",
        predicted="<= 1",
        detail="; ".join(parts),
        extra={"slack": worst},
    )


DESCENT_INEQUALITY = Claim(
    "descent-inequality",
    "docs/theory.md (a): (1/K) sum E||grad f(xbar^k)||^2 <= 2(f0 - E f(xbar^K))/(gamma K) + L gamma "
    "sigma^2/n + L^2 Xi for gamma <= 1/L",
    ("descent",),
    "LHS - RHS per replica, one-sided t over replicas",
    "pass iff E[LHS - RHS] <= 0 is not rejected at 95% in every run; inconclusive where gamma L > 1",
    make_control(
        "biased-gradient",
        "a constant gradient bias of norm sigma (e.g. a biased compressor)",
        ("descent",),
        bias=1.0,
    ),
    check_descent,
    uses=("L", "sigma2", "bias"),
    bound=True,
)


def _disconnected_in_run(data, label, parts):
    """Whether the schedule ``label`` disconnects within the longest run (mixing-constants fails
    there): its S2, measured over the horizon, then bounds nothing; the reason goes into ``parts``."""
    w = data["mixing"]["schedules"][label].get("run_window_disconnected")
    if w is None:
        return False
    parts.append(
        f"{label}: not strongly connected over steps [{w[0]}, {w[1]}) of the run (mixing-constants): S2, "
        "measured over the horizon, does not hold there"
    )
    return True


def _bound_inputs(cfg, data, label, r):
    mx = data["mixing"]["schedules"][label]
    g2sq = r.get("G2sq")
    G2 = math.sqrt(g2sq) if all_finite(g2sq) and g2sq > 0 else None
    return mx.get("S2"), r["weight_min"], G2


def consensus_bound_of(data: dict[str, Any], label: str, r: dict[str, Any]) -> float | None:
    """The bound (b2) ``(gamma S2 G2 / delta)^2`` of run ``r`` of schedule ``label``, or None where it
    cannot be evaluated (no mixing data, the schedule disconnects in the run, S2, G2 or delta not
    finite and positive, or the bound not a finite positive number)."""
    if label not in data.get("mixing", {}).get("schedules", {}) or _disconnected_in_run(data, label, []):
        return None
    S2, delta, G2 = _bound_inputs(None, data, label, r)
    if not (all_finite(S2, G2, delta, r.get("gamma")) and delta > 0):
        return None
    bound = theory.evaluate(theory.CONSENSUS_BOUND_L2, gamma=r["gamma"], S2=S2, G2=G2, delta=delta)
    return float(bound) if all_finite(bound) and bound > 0 else None


def consensus_bound_ratio(data: dict[str, Any], label: str, r: dict[str, Any]) -> float | None:
    """``max_k E Xi^k`` of run ``r`` of schedule ``label`` over its bound (b2)
    (:func:`consensus_bound_of`), or None where either is not measurable."""
    bound = consensus_bound_of(data, label, r)
    return r["consensus_max"] / bound if bound is not None and all_finite(r.get("consensus_max")) else None


def check_consensus_bound(cfg: SuiteConfig, data: dict[str, Any]) -> dict[str, Any]:
    """Consensus bound (b2), run by run: max_k E Xi^k <= (gamma S2 G2 / delta)^2."""
    verdicts, parts, worst = [], [], 0.0
    for label, sch in data["rates"]["schedules"].items():
        if _disconnected_in_run(data, label, parts):
            verdicts.append("inconclusive")
            continue
        for r in sch["runs"]:
            ratio = consensus_bound_ratio(data, label, r)
            if ratio is None:
                verdicts.append("inconclusive")
                parts.append(
                    f"{label} K={r['K']}: S2, G2, delta or the consensus not measurable (finite), or the bound "
                    "not a finite positive number"
                )
                continue
            worst = max(worst, ratio)
            verdicts.append("pass" if ratio <= 1 else "fail")
        S2 = data["mixing"]["schedules"][label].get("S2")
        parts.append(f"{label}: S2 = {fmt(S2)}; worst max_k Xi^k / bound over K = {worst:.3g}" + short_horizon(S2, cfg))
    return dict(
        verdict=combine(verdicts),
        measured=f"max ratio {worst:.3g}",
        predicted="<= 1",
        detail="; ".join(parts),
        extra={"slack": worst},
    )


CONSENSUS_BOUND = Claim(
    "consensus-bound",
    "docs/theory.md (b2): E Xi^k <= (gamma S2 G2 / delta)^2 for every k",
    ("rates", "mixing"),
    "max over k of the replica mean of Xi^k over the bound, each run",
    "pass iff max_k E Xi^k <= bound in every run (S2 measured on the schedule, G2 and delta on the run)",
    make_control(
        "no-debias",
        "push-sum without de-biasing (z = x) on a schedule whose weights move",
        ("rates",),
        debias=False,
    ),
    check_consensus_bound,
    bound=True,
)


def check_combined_bound(cfg: SuiteConfig, data: dict[str, Any]) -> dict[str, Any]:
    """Combined bound (c2), run by run: stationarity average <= descent RHS with Xi bounded by (b2)."""
    const = data["rates"]["constants"]
    verdicts, parts, worst = [], [], 0.0
    for label, sch in data["rates"]["schedules"].items():
        if _disconnected_in_run(data, label, parts):
            verdicts.append("inconclusive")
            continue
        how, skipped = "not computed: no run qualifies", []
        for r in sch["runs"]:
            S2, delta, G2 = _bound_inputs(cfg, data, label, r)
            if not (all_finite(S2, G2, delta, r["gamma"]) and delta > 0):
                verdicts.append("inconclusive")
                skipped.append(f"K={r['K']}: S2, G2 or delta not measurable (finite){short_horizon(S2, cfg)}")
                continue
            if r["gamma"] * const["L"] > 1:
                verdicts.append("inconclusive")
                skipped.append(f"K={r['K']}: gamma L = {r['gamma'] * const['L']:.3g} > 1, outside (c2)'s hypothesis")
                continue
            Delta, how = _delta_of(const, float(np.mean(r["f0"])))
            bound = theory.evaluate(
                theory.COMBINED_BOUND_L2,
                Delta=Delta,
                gamma=r["gamma"],
                K=r["K"],
                L=const["L"],
                sigma2=const["sigma2"],
                n=r["n"],
                S2=S2,
                G2=G2,
                delta=delta,
            )
            m, se = mean_se(r["stationarity"])
            if not (all_finite(m, bound, Delta) and bound > 0):
                verdicts.append("inconclusive")
                skipped.append(f"K={r['K']}: the stationarity average or the bound is not finite")
                continue
            lower = m - stats.t.ppf(level(), len(r["stationarity"]) - 1) * se
            ratio = m / bound
            worst = max(worst, ratio)
            verdicts.append("pass" if lower <= bound else "fail")
        parts.append(
            f"{label}: worst stationarity / bound over K = {worst:.3g} (Delta = {how})"
            + (f"; inconclusive runs: {', '.join(skipped)}" if skipped else "")
        )
    return dict(
        verdict=combine(verdicts),
        measured=f"max ratio {worst:.3g}",
        predicted="<= 1",
        detail="; ".join(parts),
        extra={"slack": worst},
    )


COMBINED_BOUND = Claim(
    "combined-bound",
    "docs/theory.md (c2): (1/K) sum E||grad f(xbar^k)||^2 <= 2 Delta/(gamma K) + L gamma sigma^2/n "
    "+ L^2 (gamma S2 G2/delta)^2",
    ("rates", "mixing"),
    "stationarity average over the bound, each run, Delta with the true f*",
    "pass iff the one-sided 95% lower confidence limit of the stationarity average is <= the bound in every "
    "run with gamma L <= 1",
    make_control("biased-gradient", "a constant gradient bias of norm sigma", ("rates",), bias=1.0),
    check_combined_bound,
    uses=("L", "sigma2", "f_lower", "f_star", "bias"),
    bound=True,
)
