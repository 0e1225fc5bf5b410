"""The tau-OSGP experiment: every tau of ``taus`` on the setting's first schedule."""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from ..departures import NONE, Variant
from ..products import product_constants
from ..runs import problem_constants, run_ladder
from ..setting import resolve_problem, setting_schedules

if TYPE_CHECKING:
    from collections.abc import Callable

    from ..config import SuiteConfig

__all__ = ["exp_delays", "complete_delays_control", "delay_ladder"]


def delay_ladder(cfg: SuiteConfig) -> tuple[int, ...]:
    """K ladder of the delay experiment: the ratio check's ``delay_Ks`` and the exponent's ``Ks``."""
    return tuple(sorted(set(cfg.delay_Ks) | set(cfg.Ks)))


def exp_delays(
    cfg: SuiteConfig,
    seed: int,
    variant: Variant = NONE,
    progress: Callable[[str], None] | None = None,
) -> dict[str, Any]:
    """tau-OSGP on the setting's first schedule, random delays: stationarity and consensus
    averages for tau in ``taus`` at every K of ``delay_Ks`` and ``Ks`` (the ratio check reads
    the first, the per-tau exponent the second), and the product constant S2 of each tau for
    the consensus bound (b2)."""
    prob = resolve_problem(cfg.problem, cfg)(cfg.n, seed)
    label, make = setting_schedules(cfg)[0]
    topo = make(cfg.n, seed)
    Ks = delay_ladder(cfg)
    by_tau = [
        run_ladder(
            cfg,
            prob,
            topo,
            Ks,
            seed,
            variant,
            tau=tau,
            delay="random",
            replicas=cfg.delay_replicas,
            regime=tau == 0,
            progress=(lambda K, tau=tau: progress(f"delays K={K} tau={tau}")) if progress else None,
        )
        for tau in cfg.taus
        # a control's departure concerns the delayed runs: the reference comes from the main run
        if not (tau == 0 and variant != NONE)
    ]
    runs = [rs[i] for i in range(len(Ks)) for rs in by_tau]  # K by K, every tau at each: as run one at a time
    products = {}
    for tau in cfg.taus if variant == NONE else ():  # the schedule's constants: the control's are the same
        pc = product_constants(topo, tau, "random", seed, cfg.bound_horizon)
        products[str(tau)] = {k: pc.get(k) for k in ("S2", "q_tail", "product_note")}
    return {"runs": runs, "schedule": label, "products": products, "constants": problem_constants(prob)}


def complete_delays_control(main: dict, ctl: dict) -> dict:
    """A control's delay data with the main run's tau = 0 reference and product constants (the
    control's departure concerns the delayed runs; the schedule's constants are the same)."""
    ref = [r for r in main["runs"] if r["tau"] == 0]
    return {**ctl, "runs": ref + ctl["runs"], "products": main["products"]}
