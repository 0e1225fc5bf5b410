"""Claims on tau-OSGP: delays enter only higher-order terms, the rate and the consensus bound hold."""

from __future__ import annotations

import math
from typing import TYPE_CHECKING, Any

import numpy as np

from ... import theory
from ..criteria import RATE_DELTA
from ..records import Claim, make_control
from .common import (
    RATE_RULES,
    RATIO_RULES,
    all_finite,
    combine,
    consensus_regime,
    expo,
    exponent_result,
    exponent_test,
    fmt,
    log_ratio_limit,
    outside_step_regime,
    short_horizon,
    unless_faster,
    unless_pre_asymptotic,
)

if TYPE_CHECKING:
    from collections.abc import Iterable

    from ..config import SuiteConfig

__all__ = [
    "reference_outside_regime",
    "DELAY_ROBUSTNESS",
    "DELAY_RATE",
    "DELAY_CONSENSUS",
    "check_delays",
    "check_delay_rate",
    "check_delay_consensus",
]


def reference_outside_regime(delays: dict[str, Any], Ks: Iterable[int] | None = None) -> str | None:
    """Why the delay claims cannot judge the delayed runs, or None: their tau = 0 reference on the
    check's own ladder ``Ks`` (default: every K of the experiment) is outside the step-size regime
    of the analysis (:func:`outside_step_regime`). The delayed runs
    themselves are not gated: mass in flight lowers the real nodes' weights (on the defaults,
    gamma / w_min reaches 9.3/L at tau = 4, K = 256), yet their rate is the claim under test."""
    L = delays.get("constants", {}).get("L")
    on = None if Ks is None else set(Ks)
    why = outside_step_regime(
        [r for r in delays["runs"] if r["tau"] == 0 and (on is None or r["K"] in on)], lambda r: L
    )
    return None if why is None else f"the tau = 0 reference runs are {why}"


def _gated(data, why, predicted):
    return dict(
        verdict="inconclusive",
        measured="tau = 0 reference outside the step-size regime",
        predicted=predicted,
        detail=f"{data['delays']['schedule']}, random delays: {why}",
    )


def check_delays(cfg: SuiteConfig, data: dict[str, Any]) -> dict[str, Any]:
    """tau-OSGP: log of the stationarity ratio to tau = 0 tends to 0 as K -> oo (delays enter only
    higher-order terms): paired by replica, extrapolated in K^-1/2."""
    get = {(r["K"], r["tau"]): r for r in data["delays"]["runs"]}
    Ks = list(cfg.delay_Ks)  # the ratio's own ladder (the experiment also runs the exponent's Ks)
    why = reference_outside_regime(data["delays"], Ks)
    if why is not None:
        return _gated(data, why, f"1 (log within +- {RATE_DELTA:g})")
    verdicts, parts, short, tests = [], [], [], {}
    for tau in [t for t in cfg.taus if t]:
        t = log_ratio_limit(get, Ks, tau, 0)
        t = unless_pre_asymptotic(t, consensus_regime([get[K, tau] for K in Ks], f"tau={tau}"))
        tests[tau] = t
        verdicts.append(t.verdict)
        ratios = [float(np.mean(get[K, tau]["stationarity"]) / np.mean(get[K, 0]["stationarity"])) for K in Ks]
        c2 = np.mean(get[Ks[-1], tau]["consensus"]) / np.mean(get[Ks[-1], 0]["consensus"])
        parts.append(
            f"tau={tau}: stationarity ratio by K "
            + ", ".join(f"{K}: {v:.3f}" for K, v in zip(Ks, ratios))
            + f"; log-ratio limit {t}; consensus x{c2:.2f} at K={Ks[-1]}"
        )
        short.append(f"{tau}: {expo(t.exponent):.3f}")
    return dict(
        verdict=combine(verdicts),
        measured="ratio limit by tau " + ", ".join(short),
        predicted=f"1 (log within +- {RATE_DELTA:g})",
        detail=f"{data['delays']['schedule']}, random delays: " + "; ".join(parts),
        extra={"per_tau": {str(k): t.to_dict() for k, t in tests.items()}},
    )


DELAY_ROBUSTNESS = Claim(
    "delay-robustness",
    "tau-OSGP: delays enter only higher-order terms (same leading term as SGP)",
    ("delays",),
    "log of the stationarity ratio tau / tau=0, paired by replica, at each K, extrapolated "
    "to K -> oo with K^-1/2 and K^-1 correction terms",
    f"pass iff, for every tau, the 95% interval of the limit lies in 0 +- {RATE_DELTA} (the exponent test's "
    "rules); fail iff outside; inconclusive otherwise; " + RATIO_RULES,
    make_control(
        "message-loss",
        "0.1% of the delayed runs' messages lost in flight (tau = 0 reference intact)",
        ("delays",),
        loss=0.001,
    ),
    check_delays,
)


def check_delay_rate(cfg: SuiteConfig, data: dict[str, Any]) -> dict[str, Any]:
    """tau-OSGP, tau in ``taus`` (> 0), random delays: the stationarity average ~ K^(-1/2) (the same
    exponent test as tau = 0, over the K of ``Ks``)."""
    get = {(r["K"], r["tau"]): r for r in data["delays"]["runs"]}
    why = reference_outside_regime(data["delays"], cfg.Ks)
    if why is not None:
        return _gated(data, why, f"-0.5 +- {RATE_DELTA:g}")
    parts, verdicts, tests = [], [], {}
    for tau in [t for t in cfg.taus if t]:
        Y = np.array([get[K, tau]["stationarity"] for K in cfg.Ks]).T
        t = unless_faster(exponent_test(list(cfg.Ks), Y, predicted=-0.5, what=f"tau={tau} stationarity"))
        tests[f"tau={tau}"] = t
        verdicts.append(t.verdict)
        parts.append(
            f"tau={tau} ({data['delays']['schedule']}, random delays): {t}; local slopes "
            + ", ".join(f"{v:.3f}" for v in t.local_slopes)
        )
    return exponent_result(tests, verdicts, parts, -0.5)


DELAY_RATE = Claim(
    "delay-rate",
    "tau-OSGP: the stationarity average decays like K^-1/2 for every tau (random delays up to tau)",
    ("delays",),
    "extrapolated exponent in K of the stationarity average per tau in taus (> 0), on the K of Ks",
    f"pass iff, for every tau, the 95% interval lies in -1/2 +- {RATE_DELTA}; fail iff outside; inconclusive "
    "otherwise (as for stationarity-rate); " + RATE_RULES,
    make_control(
        "constant-step", "gamma = sqrt(n/K_min) at every K instead of sqrt(n/K)", ("delays",), step="constant"
    ),
    check_delay_rate,
    uses=("bias",),
)


def check_delay_consensus(cfg: SuiteConfig, data: dict[str, Any]) -> dict[str, Any]:
    """tau-OSGP: the consensus bound (b2) with the product constant S2 of each tau's augmented
    schedule, run by run, and the growth of the consensus average with tau set beside the bound's."""
    d = data["delays"]
    get = {(r["K"], r["tau"]): r for r in d["runs"]}
    Ks = sorted({r["K"] for r in d["runs"]})
    verdicts, parts, worst, growth = [], [], 0.0, {}
    for tau in cfg.taus:
        S2 = d["products"][str(tau)]["S2"]
        tau_worst = 0.0
        for K in Ks:
            r = get[K, tau]
            g2sq = r.get("G2sq")
            G2 = math.sqrt(g2sq) if all_finite(g2sq) and g2sq > 0 else None
            if not (all_finite(S2, G2, r["gamma"], r["consensus_w2_max"], r["weight_min"]) and r["weight_min"] > 0):
                verdicts.append("inconclusive")
                continue
            # (b2) with the weight floor of each step k (delays drain the weights early on): E Xi^k
            # (min_i w_i^k)^2 <= (gamma S2 G2)^2 for every k
            bound = theory.evaluate(theory.CONSENSUS_BOUND_L2, gamma=r["gamma"], S2=S2, G2=G2, delta=1.0)
            if not (all_finite(bound) and bound > 0):
                verdicts.append("inconclusive")
                continue
            ratio = r["consensus_w2_max"] / bound
            tau_worst = max(tau_worst, ratio)
            verdicts.append("pass" if ratio <= 1 else "fail")
        worst = max(worst, tau_worst)
        K = Ks[-1]
        r, r0 = get[K, tau], get[K, cfg.taus[0]]
        with np.errstate(divide="ignore", invalid="ignore"):
            meas = float(np.mean(r["consensus"]) / np.mean(r0["consensus"]))
        S20 = d["products"][str(cfg.taus[0])]["S2"]
        pred = None
        if all_finite(S2, S20, r.get("G2sq"), r0.get("G2sq")) and S20 and r0["G2sq"]:
            pred = float((S2 / S20) ** 2 * r["G2sq"] / r0["G2sq"])
        growth[str(tau)] = {"measured": meas, "bound": pred, "S2": S2}
        parts.append(
            f"tau={tau}: S2 = {fmt(S2)}, worst max_k Xi^k / bound over K = {tau_worst:.3g}; consensus "
            f"average x{meas:.3g} of tau={cfg.taus[0]} at K={K} (the bound's factor x{fmt(pred)})"
            + short_horizon(S2, cfg)
        )
    short = ", ".join(f"{t}: x{g['measured']:.2f} (bound x{fmt(g['bound'])})" for t, g in growth.items())
    return dict(
        verdict=combine(verdicts),
        measured=f"max ratio {worst:.3g}; growth by tau {short}",
        predicted="<= 1",
        detail=f"{d['schedule']}, random delays: "
        + "; ".join(parts)
        + "; S2 from dense products of the augmented matrices "
        "(random delays: the run's realisation, sampled starts)",
        extra={"slack": worst, "growth": growth},
    )


DELAY_CONSENSUS = Claim(
    "delay-consensus",
    "tau-OSGP: the consensus error stays within the derived bound (b2) for every tau, the delays entering "
    "through the product constant S2 of the augmented schedule",
    ("delays",),
    "max over k of E[Xi^k] delta_k^2 / (gamma S2(tau) G2)^2 (delta_k: the weight floor of step k), "
    "each run; growth of the consensus average with tau beside the bound's",
    "pass iff the ratio is <= 1 in every run of every tau (S2 from the augmented schedule, G2 and delta_k "
    "from the run)",
    make_control(
        "no-debias",
        "push-sum without de-biasing (z = x) on the delayed runs (delays move the weights)",
        ("delays",),
        debias=False,
    ),
    check_delay_consensus,
    bound=True,
)
