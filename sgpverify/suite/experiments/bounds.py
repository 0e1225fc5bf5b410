"""Experiments of the bounds: the descent inequality run by run, Theorem 1 at its threshold."""

from __future__ import annotations

import math
from typing import TYPE_CHECKING, Any

from ... import graphs, theory
from ..departures import NONE, Variant
from ..runs import problem_constants, run_one
from ..setting import resolve_problem, setting_schedules

if TYPE_CHECKING:
    from collections.abc import Callable

    from ..config import SuiteConfig

__all__ = ["exp_descent", "exp_theorem", "theorem_threshold", "theorem_run_length"]


def exp_descent(
    cfg: SuiteConfig,
    seed: int,
    variant: Variant = NONE,
    progress: Callable[[str], None] | None = None,
) -> dict[str, Any]:
    """The descent inequality (a), run by run: the setting's first schedule, and
    random-peer with random delays (the column-stochastic, delayed case)."""
    prob = resolve_problem(cfg.problem, cfg)(cfg.n, seed)
    label0, make0 = setting_schedules(cfg)[0]
    out = []
    for label, topo, tau, delay in (
        (label0, make0(cfg.n, seed), cfg.tau, cfg.delay),
        (f"random-peer, tau={cfg.descent_tau} random", graphs.random_peer(cfg.n, seed=seed), cfg.descent_tau, "random"),
    ):
        for K in cfg.descent_Ks:
            r = run_one(cfg, prob, topo, K, seed, variant, tau=tau, delay=delay)
            g = r["gamma"]
            rhs = [
                theory.evaluate(
                    theory.DESCENT_RHS_MEASURABLE,
                    f0=f0,
                    fK=fK,
                    gamma=g,
                    K=K,
                    L=prob.L,
                    sigma2=prob.sigma2,
                    n=prob.n_nodes,
                    Xi=xi,
                )
                for f0, fK, xi in zip(r["f0"], r["fK"], r["consensus"])
            ]
            r.update(label=label, lhs=r["stationarity"], rhs=rhs, gamma_L=g * prob.L)
            out.append(r)
            if progress:
                progress(f"descent {label} K={K}")
    return {"runs": out, "constants": problem_constants(prob)}


def theorem_threshold(cfg: SuiteConfig, L: float, C: float, q: float) -> float:
    """The known part of Theorem 1's threshold on K with the envelope (C, q) and the declared L."""
    return theory.evaluate(theory.PUBLISHED_THRESHOLD_KNOWN_PART, n=cfg.n, L=L, C=max(C, 1e-300), q=min(q, 1 - 1e-15))


def theorem_run_length(cfg: SuiteConfig, threshold: float) -> int | None:
    """K of the Theorem 1 run at ``threshold``: ``max(ceil(threshold), K_max)``, or None where the
    threshold exceeds ``theorem_K_cap`` (no run: outside the theorem's regime)."""
    K = int(math.ceil(threshold))
    return max(K, cfg.Ks[-1]) if K <= cfg.theorem_K_cap else None


def exp_theorem(
    cfg: SuiteConfig,
    seed: int,
    mixing_data: dict[str, Any],
    variant: Variant = NONE,
    progress: Callable[[str], None] | None = None,
) -> dict[str, Any]:
    """Theorem 1 where it applies: one run per schedule at the threshold computed from
    the envelope (if the known part of the threshold is within ``theorem_K_cap``)."""
    prob = resolve_problem(cfg.problem, cfg)(cfg.n, seed)
    out = {}
    for label, make in setting_schedules(cfg):
        mx = mixing_data["schedules"][label]
        C, q = mx.get("C"), mx.get("q")  # the envelope valid over the whole measured horizon
        entry = {
            "C": C,
            "q": q,
            "q_source": mx.get("q_source"),
            "C_fit": mx.get("C_fit"),
            "q_fit": mx.get("q_fit"),
            "run": None,
        }
        if C is None:
            entry["threshold"] = None
            out[label] = entry
            continue
        thr = theorem_threshold(cfg, prob.L, C, q)
        entry["threshold"] = thr
        lL = 4 * math.log10(prob.L)
        entry["threshold_fit"] = (
            10 ** (mx["threshold_fit_log10"] + lL) if mx.get("threshold_fit_log10") is not None else None
        )
        entry["threshold_no_log10"] = (
            mx["threshold_theory_log10"] + lL if mx.get("threshold_theory_log10") is not None else None
        )
        K = theorem_run_length(cfg, thr)
        mx_run = mx.get("run_window_disconnected")
        if K is not None and mx.get("run_steps") is not None and mx_run is not None:
            entry["disconnected"] = list(mx_run)  # the schedule breaks Assumption 3 within the run: no run
        elif K is not None:
            entry["run"] = run_one(cfg, prob, make(cfg.n, seed), K, seed, variant, replicas=cfg.theorem_replicas)
            if progress:
                progress(f"theorem {label} K={K}")
        out[label] = entry
    return {"schedules": out, "constants": problem_constants(prob)}
