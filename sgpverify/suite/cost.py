"""The cost model of settling: what a run of some checks under a configuration costs, in seconds.

:func:`calibrate` times the engine on the user's own problem (a short run, with and without the
per-step evaluations of the metrics); :func:`experiment_runs` lists the runs an experiment makes
under a configuration; :func:`estimate_seconds` adds them up, with the controls' units
(:func:`control_units`) and without the main units a round for controls alone leaves out
(:func:`control_mains`). :mod:`sgpverify.suite.settle` plans its rounds with these estimates, and
:mod:`sgpverify.suite.hints` prints them; they choose what runs, never a verdict.
"""

from __future__ import annotations

import dataclasses
import math
import time
import warnings
from typing import TYPE_CHECKING

from .claims import BY_NAME
from .experiments import EXPERIMENTS, SCALINGS, needs_of
from .experiments.delays import delay_ladder
from .runs import prefix_ladder

if TYPE_CHECKING:
    from collections.abc import Iterable

    from .config import SuiteConfig
    from .departures import Variant
    from .records import Claim

__all__ = [
    "ROUND_OVERHEAD",
    "calibrate",
    "step_seconds",
    "theorem_run_steps",
    "experiment_runs",
    "control_units",
    "control_mains",
    "prefix_samples",
    "estimate_seconds",
    "duration",
]


def calibrate(cfg: SuiteConfig, seed: int = 0, steps: int = 256) -> tuple[float, float, float, float, float]:
    """``(a, b, c, a0, b0)``: seconds per step of the engine on the setting's problem (n, d) and first
    schedule are about ``a + b R`` with R replicas, from two short runs (``steps`` steps, 1 and
    ``rate_replicas`` replicas), each after an untimed run of ``steps // 8`` steps with as many
    replicas (a first call's one-off costs, the kernels' loading and first allocations, are no part
    of a step); ``a0 + b0 R`` the same without the problem's ``full_grad`` and ``value`` at each step
    (a ``metric_mask`` that evaluates the ends only: what a sampled run, ``metric_samples``, spends
    besides its samples); ``c``: seconds per step of the mixing experiment's connectivity stream over
    a run (on the same schedule, ``32 steps`` steps: shorter streams are dominated by their start)."""
    import numpy as np

    from ..assumptions.check import run_connectivity
    from ..engine import simulate
    from ..errors import EffectiveStepWarning
    from .setting import resolve_problem, setting_schedules

    prob = resolve_problem(cfg.problem, cfg)(cfg.n, seed)
    _, make = setting_schedules(cfg)[0]
    topo = make(cfg.n, seed)
    R = max(2, cfg.rate_replicas)
    per = []
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", EffectiveStepWarning)
        x0, gamma = np.full(cfg.d, cfg.x0), math.sqrt(cfg.n / steps)
        for ends in (False, True):
            for r in (1, R):
                for n_iter in (max(1, steps // 8), steps):  # the warm-up, then the timed run
                    mask = None
                    if ends:
                        mask = np.zeros((n_iter + 1, r), dtype=bool)
                        mask[[0, n_iter]] = True
                    t0 = time.perf_counter()
                    simulate(prob, topo, step_size=gamma, n_iter=n_iter, x0=x0, replicas=r, metric_mask=mask)
                per.append((time.perf_counter() - t0) / steps)
        t0 = time.perf_counter()
        run_connectivity(topo, 32 * steps, cfg.mixing_horizon)
        c = (time.perf_counter() - t0) / (32 * steps)
    b = max(0.0, (per[1] - per[0]) / (R - 1))
    b0 = min(b, max(0.0, (per[3] - per[2]) / (R - 1)))
    a = max(0.0, per[0] - b)
    return a, b, c, min(a, max(0.0, per[2] - b0)), b0


def step_seconds(cfg: SuiteConfig, steps: int, R: int, per_step: tuple[float, ...]) -> float:
    """Seconds a step of a run of ``steps`` steps with R replicas costs under ``cfg``, from the
    calibration ``per_step`` (:func:`calibrate`): ``a + b R``, or, where the run samples its metrics
    (``metric_samples`` below ``steps``: one evaluation per replica in every ``s = steps /
    metric_samples`` steps), ``a0 + b0 R`` plus the evaluations' share, ``(b - b0) R / s`` and the
    calls' ``(a - a0)`` at the steps where some replica evaluates (``1 - (1 - 1/s)^R`` of them)."""
    a, b = per_step[:2]
    if not cfg.metric_samples or steps <= cfg.metric_samples or len(per_step) < 5:
        return a + b * R
    a0, b0 = per_step[3:5]
    s = steps / cfg.metric_samples
    return a0 + b0 * R + (a - a0) * (1.0 - (1.0 - 1.0 / s) ** R) + (b - b0) * R / s


def theorem_run_steps(cfg: SuiteConfig, steps: tuple[int, ...] | None) -> tuple[int, ...]:
    """Steps of the Theorem 1 runs under ``cfg``, one per schedule that runs: ``steps``
    (:attr:`~sgpverify.suite.settle.Evidence.steps`) where known, each at most ``theorem_K_cap``; the
    cap on every schedule where not."""
    if steps is None:
        return (cfg.theorem_K_cap,) * len(cfg.topologies)
    return tuple(min(cfg.theorem_K_cap, s) for s in steps)


def experiment_runs(
    cfg: SuiteConfig, key: str, theorem_steps: tuple[int, ...] | None = None, variant: Variant | None = None
) -> list[tuple[int, int, int]]:
    """``(steps, replicas, n)`` of every run of experiment ``key`` under ``cfg`` (an upper estimate;
    Theorem 1's runs at ``theorem_steps`` where given, else at ``theorem_K_cap`` on every schedule).
    ``variant``: the runs of that control in a settling round instead of the main runs: the delay
    experiment's control leaves out tau = 0 (the main run's reference completes it), and a ladder
    that a round runs as one run (:func:`~sgpverify.suite.runs.prefix_ladder`) costs its longest."""
    if variant is not None:
        runs = experiment_runs(cfg, key, theorem_steps)
        if key == "delays":
            runs = runs[: len(delay_ladder(cfg)) * (len(cfg.taus) - 1)]  # every tau's runs alike: one fewer tau
        ladder = _one_run_ladder(cfg, key, variant)
        if ladder is not None:
            runs = [(s, R, m) for s, R, m in runs if s == max(ladder)]
        return runs
    n, S = cfg.n, len(cfg.topologies)
    if key == "rates":  # own realisations: on a random schedule one run of one replica each (exp_rates)
        from .setting import is_random, setting_schedules

        return [
            run
            for _, make in setting_schedules(cfg)
            for run in (
                [(K, 1, n) for K in cfg.Ks] * cfg.rate_replicas
                if cfg.own_realisations and is_random(make, n)
                else [(K, cfg.rate_replicas, n) for K in cfg.Ks]
            )
        ]
    if key == "speedup":
        return [(K, cfg.speedup_replicas, m) for m in cfg.speedup_ns for K in cfg.speedup_Ks] * S
    if key == "descent":
        return [(K, cfg.replicas, n) for K in cfg.descent_Ks] * 2
    if key == "theorem":
        return [(steps, cfg.theorem_replicas, n) for steps in theorem_run_steps(cfg, theorem_steps)]
    if key == "delays":
        return [(K, cfg.delay_replicas, n) for K in delay_ladder(cfg)] * len(cfg.taus)
    if key == "baselines":
        return [(K, cfg.replicas, n) for K in cfg.baseline_Ks] * (4 * S)
    if key == "topologies":
        return [(K, cfg.topology_replicas, n) for K in cfg.topology_Ks] * (2 + len(cfg.compare_topologies))
    if key == "scaling":
        return [(K, cfg.scaling_replicas, n) for K in cfg.scaling_Ks] * len(SCALINGS)
    if key == "complexity":
        return [(T // m, cfg.complexity_replicas, m) for m in cfg.complexity_ns for T in cfg.complexity_budgets]
    return []


def control_units(cfg: SuiteConfig, names: Iterable[str]) -> list[tuple[str, float, Variant]]:
    """The control units a run of checks ``names`` with controls adds: ``(experiment, share,
    variant)``, one per experiment and control (as :func:`~sgpverify.suite.runner.plan_units` lists
    them), with the share of the experiment's runs (:func:`experiment_runs` of the variant) it makes:
    a control of an experiment that runs on the setting's schedules runs on one of them
    (:func:`~sgpverify.suite.setting.control_schedules`), 1/S of them."""
    S = max(1, len(cfg.topologies))
    out, seen = [], set()
    for nm in names:
        ctl = BY_NAME[nm].control
        for k in ctl.experiments if ctl is not None else ():
            if (k, ctl.variant) in seen:
                continue
            seen.add((k, ctl.variant))
            exp = EXPERIMENTS.get(k)
            out.append((k, 1.0 / S if exp is not None and exp.on_schedules else 1.0, ctl.variant))
    return out


def control_mains(claims: Iterable[Claim]) -> set[str]:
    """The main experiments that a round for the controls of ``claims`` alone can leave out: those that
    only the controls' own evaluation reads, where the control's data replace them whole. Kept: every
    experiment a bound claim reads (its control is weighed against the check's own ratio), one whose
    control is completed from the main data (the delays' tau = 0 reference, the topologies' reference
    schedule, the worst case), one that a departure is judged vacuous on (no de-biasing, a dropped
    term), what other experiments need and what always runs."""
    claims = list(claims)
    keep = set(needs_of(k for c in claims for k in c.experiments)) | {k for k, e in EXPERIMENTS.items() if e.always}
    drop = set()
    for c in claims:
        v, own = c.control.variant, set(c.control.experiments)
        whole = all(k in EXPERIMENTS and EXPERIMENTS[k].complete_control is None for k in own)
        if c.bound or not v.debias or v.drop_term or not whole:
            keep |= set(c.experiments) | own
        else:
            keep |= set(c.experiments) - own
            drop |= own
    return drop - keep


def _one_run_ladder(cfg: SuiteConfig, key: str, variant: Variant) -> tuple[int, ...] | None:
    """The K ladder of experiment ``key`` that a settling round runs as one run for control ``variant``
    (:func:`~sgpverify.suite.runs.prefix_ladder`; the rates' ``Ks``, the delays' :func:`delay_ladder`),
    None where its Ks run one at a time."""
    if key not in ("rates", "delays") or not prefix_ladder(dataclasses.replace(cfg, noise_stream=1), variant):
        return None
    return tuple(cfg.Ks) if key == "rates" else delay_ladder(cfg)


def prefix_samples(cfg: SuiteConfig, key: str, variant: Variant) -> SuiteConfig:
    """The configuration a round's one-run ladder of experiment ``key`` (:func:`experiment_runs` with
    ``variant``) is costed under: its run evaluates the metrics at the union of every K's own sample
    of steps (:func:`~sgpverify.suite.runs.run_ladder`), up to ``sum_K min(K, metric_samples)`` steps
    per replica (an upper estimate: the samples overlap), not the longest K's ``metric_samples``
    alone. ``cfg`` itself where the experiment's ladder runs one K at a time or every step is evaluated.
    (Without this a round's ladder 16384..65536 was estimated at 33 s and ran in 51 s on tanh
    regression; the slowdown it measured then scaled every later estimate by 1.55.)"""
    ladder = _one_run_ladder(cfg, key, variant)
    if ladder is None or not cfg.metric_samples:
        return cfg
    m = int(cfg.metric_samples)
    return dataclasses.replace(cfg, metric_samples=min(max(ladder), sum(min(int(K), m) for K in ladder)))


#: Seconds a round spends besides its runs (the mixing constants, the declared constants, the weights).
ROUND_OVERHEAD = 3.0


def estimate_seconds(
    cfg: SuiteConfig,
    names: list[str],
    per_step: tuple[float, ...],
    controls: bool = False,
    workers: int = 1,
    controls_only: bool = False,
    theorem_steps: tuple[int, ...] | None = None,
) -> float:
    """Wall seconds of a run of checks ``names`` under ``cfg``, from the calibration ``per_step``
    (:func:`calibrate`): runs cost ``a + b R`` a step at ``cfg.n`` (n / cfg.n times that at n nodes),
    the mixing experiment ``c`` a step of the longest run on each schedule (it streams the
    connectivity over every step a run takes, which comes first); then the largest unit, or the
    total over ``workers``, whichever is longer. ``controls_only``: a round for the controls alone,
    without the main units it leaves out (:func:`control_mains`). ``theorem_steps``: the lengths of
    Theorem 1's runs where known (:attr:`~sgpverify.suite.settle.Evidence.steps`), else
    ``theorem_K_cap`` on every schedule."""
    from .config import longest_run

    c = per_step[2] if len(per_step) > 2 else 0.0
    keys = list(dict.fromkeys(k for nm in names for k in BY_NAME[nm].experiments))
    first = 0.0
    if "mixing" in keys or "mixing" in needs_of(keys):
        steps = max(longest_run(cfg), max(theorem_run_steps(cfg, theorem_steps), default=0) if "theorem" in keys else 0)
        first = c * steps * len(cfg.topologies)

    def cost(k, variant=None):
        at = prefix_samples(cfg, k, variant) if variant is not None else cfg
        return sum(
            steps * step_seconds(at, steps, R, per_step) * m / cfg.n
            for steps, R, m in experiment_runs(cfg, k, theorem_steps, variant)
        )

    left_out = control_mains(BY_NAME[nm] for nm in names) if controls and controls_only else set()
    units = [cost(k) for k in keys if k not in left_out]
    if controls:
        units += [cost(k, variant) * share for k, share, variant in control_units(cfg, names)]
    if not units:
        return ROUND_OVERHEAD + first
    return ROUND_OVERHEAD + first + max(max(units), sum(units) / max(1, workers))


def duration(s: float) -> str:
    """``"42 s"``, ``"9 min"``, ``"1.5 h"``, ``"12 days"`` or ``"330 years"``: a time estimate in words
    (two significant digits beyond ten thousand years: an estimate, not a count)."""
    if s < 90:
        return f"{s:.0f} s"
    if s < 5400:
        return f"{s / 60:.0f} min"
    if s < 48 * 3600:
        return f"{s / 3600:.1f} h"
    days = s / 86400
    if days < 730:
        return f"{days:.0f} days"
    years = days / 365.25
    return f"{years:.0f} years" if years < 1e4 else f"{years:.1e} years"
