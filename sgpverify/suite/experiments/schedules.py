"""Experiments on the schedules themselves: the mixing assumptions and the push-sum weights."""

from __future__ import annotations

import warnings
from typing import TYPE_CHECKING, Any

import numpy as np

from ... import graphs
from ...assumptions import check_mixing, run_connectivity
from ...engine import simulate
from ...errors import EffectiveStepWarning
from ..config import longest_run
from ..departures import NONE, Variant, disconnected
from ..products import product_constants
from ..setting import resolve_problem, setting_schedules
from .bounds import theorem_run_length, theorem_threshold

if TYPE_CHECKING:
    from collections.abc import Callable

    from ..config import SuiteConfig

__all__ = ["exp_mixing", "exp_weights", "MIXING_FAMILIES"]


#: The registered families (:data:`sgpverify.graphs.FAMILIES`) whose mixing the experiment measures
#: beside the setting's schedules; a family that does not build n nodes is skipped.
MIXING_FAMILIES = ("exponential", "exponential-bidir", "ring-bidir", "torus", "hypercube", "random-peer", "erdos-renyi")


def exp_mixing(
    cfg: SuiteConfig,
    seed: int,
    variant: Variant = NONE,
    progress: Callable[[str], None] | None = None,
) -> dict[str, Any]:
    """check_mixing on graph families and on every schedule of the setting, plus the
    product constants the bounds need (dense products: suite sizes). On the setting's
    schedules, B-strong connectivity is streamed over every step of the longest run
    (:func:`~sgpverify.suite.config.longest_run`, and the Theorem 1 run where longer);
    the other constants over ``mixing_horizon``."""
    out = []
    fams = () if variant.disconnect else MIXING_FAMILIES
    for name in fams:
        if not graphs.family(name).accepts(cfg.n):  # e.g. the hypercube: n a power of two
            continue
        topo = graphs.by_name(name, cfg.n, seed=seed)
        out.append(check_mixing(topo, horizon=cfg.mixing_horizon, seed=seed).to_dict())
        if progress:
            progress(f"mixing {name}")
    sched = {}
    steps = longest_run(cfg)
    L = float(resolve_problem(cfg.problem, cfg)(cfg.n, seed).L)
    for label, make in setting_schedules(cfg):
        topo = make(cfg.n, seed)
        if variant.disconnect:
            topo = disconnected(topo)
        rep = check_mixing(topo, tau=cfg.tau, delay=cfg.delay, horizon=cfg.mixing_horizon, seed=seed).to_dict()
        # the assumptions over every step any run takes: connectivity streamed, once, over the longest
        # run, the Theorem 1 run included (its length follows from the envelope just measured)
        K = theorem_run_length(cfg, theorem_threshold(cfg, L, rep["C"], rep["q"])) if rep["C"] is not None else None
        rep["run_steps"] = max(steps, K or 0)
        if rep["B"] is not None:  # without a B over the horizon there is nothing to stream (a violation already)
            run = run_connectivity(
                topo, rep["run_steps"], cfg.mixing_horizon, B_horizon=rep["B"] if cfg.tau == 0 else None
            )
            violation = run.pop("run_violation")
            rep.update(run)
            if violation is not None:
                rep["violations"] = [*rep["violations"], violation]
                rep["passed"] = False
        rep.update(product_constants(topo, cfg.tau, cfg.delay, seed, cfg.bound_horizon))
        sched[label] = rep
        if progress:
            progress(f"mixing {label}")
    return {"families": out, "schedules": sched}


def exp_weights(
    cfg: SuiteConfig,
    seed: int,
    variant: Variant = NONE,
    progress: Callable[[str], None] | None = None,
) -> dict[str, Any]:
    """Push-sum weights over time on random-peer (for the figure): the weight floor at work."""
    prob = resolve_problem(cfg.problem, cfg)(cfg.n, seed)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", EffectiveStepWarning)  # the figure shows the weight floor itself
        tr = simulate(
            prob,
            graphs.random_peer(cfg.n, seed=seed),
            step_size=0.05,
            n_iter=200,
            x0=np.full(prob.dim, cfg.x0),
            seed=seed,
            record_every=1,
        )
    return {
        "iterations": tr.iterations.tolist(),
        "weight_min": tr.weight_min.tolist(),
        "weight_max": tr.weight_max.tolist(),
        "effective_step_max": float(tr.effective_step_max),
        "L": float(prob.L),
    }
