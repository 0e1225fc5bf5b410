"""Experiments along ladders of K, n and budgets: the rates and the speedup."""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from ..departures import NONE, Variant
from ..runs import problem_constants, run_ladder, run_one
from ..setting import realisations, resolve_problem, setting_schedules

if TYPE_CHECKING:
    from collections.abc import Callable

    from ..config import SuiteConfig
    from ..setting import TopologyFactory

__all__ = ["exp_rates", "exp_speedup", "exp_complexity"]


def exp_rates(
    cfg: SuiteConfig,
    seed: int,
    variant: Variant = NONE,
    progress: Callable[[str], None] | None = None,
    schedules: list[tuple[str, TopologyFactory]] | None = None,
) -> dict[str, Any]:
    """Stationarity and consensus averages against K, gamma = sqrt(n/K), on every schedule. With
    ``cfg.own_realisations``, on a random schedule each replica runs on its own realisation
    (:func:`~sgpverify.suite.setting.realisations`): the intervals over replicas then measure the
    schedule's family, not one graph sequence."""
    make_prob = resolve_problem(cfg.problem, cfg)
    prob = make_prob(cfg.n, seed)
    out = {}
    for label, make in schedules or setting_schedules(cfg):
        topo = make(cfg.n, seed)
        own = realisations(make, cfg.n, seed, cfg.rate_replicas) if cfg.own_realisations else None
        runs = run_ladder(
            cfg,
            prob,
            own or topo,
            cfg.Ks,
            seed,
            variant,
            replicas=cfg.rate_replicas,
            states=variant == NONE,
            regime=True,
            progress=(lambda K, label=label: progress(f"rates {label} K={K}")) if progress else None,
        )
        out[label] = {"topology": topo.name, "runs": runs}
        if own:
            out[label]["realisations"] = len(own)
    return {"n": cfg.n, "problem": repr(prob), "constants": problem_constants(prob), "schedules": out}


def exp_speedup(
    cfg: SuiteConfig,
    seed: int,
    variant: Variant = NONE,
    progress: Callable[[str], None] | None = None,
    schedules: list[tuple[str, TopologyFactory]] | None = None,
) -> dict[str, Any]:
    """Stationarity average against n at each K of ``speedup_Ks`` (gamma = sqrt(n/K))."""
    make_prob = resolve_problem(cfg.problem, cfg)
    out, consts = {}, {}
    for label, make in schedules or setting_schedules(cfg):
        runs = []
        for n in cfg.speedup_ns:
            prob = make_prob(n, seed)
            consts[str(n)] = problem_constants(prob)  # the problem may change with n: its constants tell
            topo = make(n, seed)
            for K in cfg.speedup_Ks:
                runs.append(run_one(cfg, prob, topo, K, seed, variant, replicas=cfg.speedup_replicas, regime=True))
                if progress:
                    progress(f"speedup {label} n={n} K={K}")
        out[label] = {"runs": runs}
    return {"Ks": list(cfg.speedup_Ks), "ns": list(cfg.speedup_ns), "schedules": out, "constants_by_n": consts}


def exp_complexity(
    cfg: SuiteConfig,
    seed: int,
    variant: Variant = NONE,
    progress: Callable[[str], None] | None = None,
) -> dict[str, Any]:
    """Stationarity averages for n in ``complexity_ns`` at a ladder of total budgets T = n K
    (``complexity_budgets``), gamma = sqrt(n/K), on the setting's first schedule."""
    make_prob = resolve_problem(cfg.problem, cfg)
    label, make_topo = setting_schedules(cfg)[0]
    runs, consts = [], {}
    for n in cfg.complexity_ns:
        prob = make_prob(n, seed)
        consts[str(n)] = problem_constants(prob)
        topo = make_topo(n, seed)
        for T in cfg.complexity_budgets:
            r = run_one(cfg, prob, topo, T // n, seed, variant, replicas=cfg.complexity_replicas, regime=True)
            r["budget"] = T
            runs.append(r)
            if progress:
                progress(f"complexity n={n} T={T}")
    return {
        "ns": list(cfg.complexity_ns),
        "budgets": list(cfg.complexity_budgets),
        "runs": runs,
        "schedule": label,
        "constants_by_n": consts,
    }
