"""One simulation of the suite: a configuration at one iteration budget, summarised."""

from __future__ import annotations

import math
import warnings
from typing import TYPE_CHECKING, Any

import numpy as np

from ..engine import effective_step_message, simulate, stack_replicas
from ..errors import EffectiveStepWarning, SimulationDivergedError
from .criteria import EPS, REGIME_SHARE
from .departures import NONE, Perturbed, Variant, wrap_topology
from .setting import realisation_seed

if TYPE_CHECKING:
    from collections.abc import Callable

    from ..engine import Trace
    from ..graphs import Topology
    from ..problems import ProblemProtocol
    from .config import SuiteConfig

__all__ = [
    "run_one",
    "run_ladder",
    "prefix_ladder",
    "simulate_run",
    "problem_constants",
    "step_regime_record",
    "metric_sample",
    "sampled_average",
    "METRIC_SAMPLE_KEY",
]

#: The entropy word of the sampled steps' stream (:func:`metric_sample`), apart from every noise stream.
METRIC_SAMPLE_KEY = 0x5AB1E


def _gamma(cfg, n, K, variant):
    if variant.step == "constant":
        return math.sqrt(n / min(cfg.Ks))
    return math.sqrt(n / K)


def simulate_run(
    cfg: SuiteConfig,
    prob: ProblemProtocol,
    topo: Any,
    K: int,
    seed: int,
    gamma: float,
    replicas: int,
    *,
    algorithm: Any = "sgp",
    **kw: Any,
) -> Trace:
    """The suite's one call of :func:`~sgpverify.engine.simulate` for a run at budget ``K``: every node
    starts at ``cfg.x0`` on every coordinate, the noise comes from ``seed`` (and the round's
    ``cfg.noise_stream`` under ``--settle``), and every step is recorded. Built-in experiments
    (:func:`run_one`) and declared claims (:mod:`sgpverify.declare`) both run through it."""
    return simulate(
        prob,
        topo,
        step_size=gamma,
        n_iter=K,
        x0=np.full(prob.dim, cfg.x0),
        replicas=replicas,
        seed=seed if not cfg.noise_stream else np.random.SeedSequence([seed, cfg.noise_stream]),
        record_every=1,
        algorithm=algorithm,
        **kw,
    )


def metric_sample(
    K: int, R: int, samples: int, seed: int, stream: int = 0
) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """The steps at which a run of K steps with R replicas evaluates ``full_grad`` and ``value``
    (``metric_samples`` = ``samples`` < K): steps 0..K-1 fall into ``samples`` blocks of equal length
    (to one step), and each replica draws one step uniformly from each block, from a stream of its own
    (``seed``, ``stream``, K). Returns ``(mask, steps, lengths)``: ``mask`` (K+1, R) for
    :func:`~sgpverify.engine.simulate`'s ``metric_mask`` (the drawn steps, and steps 0 and K, where
    f(xbar^0) and f(xbar^K) are read), ``steps`` (R, samples) and the blocks' ``lengths``.

    The stationarity average ``(1/K) sum_k ||grad f(xbar^k)||^2`` of a replica is then estimated by
    ``(1/K) sum_b lengths_b ||grad f(xbar^(steps_b))||^2``: stratified sampling of the run's own steps,
    unbiased given the run; the draws are independent across replicas, so their error is part of the
    replicas' spread that every interval of the suite is computed from."""
    edges = (np.arange(samples + 1, dtype=np.int64) * K) // samples
    lengths = np.diff(edges)
    rng = np.random.default_rng([METRIC_SAMPLE_KEY, int(seed), int(stream), int(K)])
    steps = edges[:-1] + (rng.random((R, samples)) * lengths).astype(np.int64)
    mask = np.zeros((K + 1, R), dtype=bool)
    mask[steps, np.arange(R)[:, None]] = True
    mask[0] = mask[K] = True
    return mask, steps, lengths


def sampled_average(values: np.ndarray, steps: np.ndarray, lengths: np.ndarray) -> np.ndarray:
    """Each replica's estimate of ``(1/K) sum_{k<K} values[r, k]`` from its sampled steps
    (:func:`metric_sample`'s ``steps`` and ``lengths``; ``values`` (R, K+1)): the block-weighted mean."""
    return (values[np.arange(values.shape[0])[:, None], steps] * lengths).sum(axis=1) / lengths.sum()


def _sampled(gns: np.ndarray, steps: np.ndarray, lengths: np.ndarray, K: int, every: int) -> tuple[list, list]:
    """The stationarity average per replica (:func:`sampled_average`) and the replica-mean curve of a
    sampled run (``gns`` (R, K+1)): at every ``every``-th step the mean of the evaluated values from there
    over ``max(every, 2 blocks)`` steps, a window that holds a whole block, so a drawn step."""
    w = max(every, 2 * int(lengths.max()))
    curve = [float(np.nanmean(gns[:, i : i + w])) for i in range(0, K + 1, every)]
    return sampled_average(gns, steps, lengths).tolist(), curve


def run_one(
    cfg: SuiteConfig,
    prob: ProblemProtocol,
    topo: Topology | list[Topology],
    K: int,
    seed: int,
    variant: Variant = NONE,
    *,
    replicas: int | None = None,
    tau: int | None = None,
    delay: str | None = None,
    algorithm: str = "sgp",
    states: bool = False,
    regime: bool = False,
) -> dict[str, Any]:
    """One simulation at iteration budget K; returns a JSON-ready summary.

    ``regime``: the run is judged by the step-size regime of the rate claims
    (:func:`sgpverify.suite.claims.common.outside_step_regime`); where its weight floor takes the
    effective step ``gamma / w_min`` beyond 2/L, the summary adds how often and for how long
    (:func:`step_regime_record`).

    ``topo`` a list (:func:`~sgpverify.suite.setting.realisations`): one realisation of a random
    schedule per replica, each run alone with the noise of :func:`~sgpverify.suite.setting.realisation_seed`
    and the runs stacked as replicas (:func:`~sgpverify.engine.stack_replicas`)."""
    kw = dict(replicas=replicas, tau=tau, delay=delay, algorithm=algorithm, states=states, regime=regime)
    return _runs(cfg, prob, topo, (K,), seed, variant, **kw)[0]


def prefix_ladder(cfg: SuiteConfig, variant: Variant) -> bool:
    """Whether :func:`run_ladder` runs a ladder of ``variant`` as one run: where the step does not
    fall with K (the constant-step control: ``gamma = sqrt(n / K_min)`` at every K), a run of K steps
    is the first K steps of the ladder's longest run, bit for bit (the engine draws its noise, its
    delays and a random schedule's graphs step by step, and nothing depends on the run's length), so
    its summaries are that run's prefixes. Only in a settling round (``noise_stream`` > 0): a
    prefix's ``mass_tol`` takes the round-off scale of the whole run (its largest state), not of the
    prefix (at least as large: a looser tolerance); the planned runs keep their own runs, and their
    bits those of the runs one at a time."""
    return variant.step == "constant" and bool(cfg.noise_stream)


def run_ladder(
    cfg: SuiteConfig,
    prob: ProblemProtocol,
    topo: Topology | list[Topology],
    Ks: tuple[int, ...] | list[int],
    seed: int,
    variant: Variant = NONE,
    progress: Callable[[int], object] | None = None,
    **kw: Any,
) -> list[dict[str, Any]]:
    """:func:`run_one` at every K of ``Ks`` (same keywords), in order: one run of the largest K whose
    prefixes give the others where :func:`prefix_ladder` says so (half the steps of the runs one at a
    time on a doubling ladder), else one run per K (also where ``states`` is asked for: a run keeps
    every s-th state, s set by its own length). ``progress(K)`` after each K's summary."""
    Ks = [int(K) for K in Ks]
    if len(Ks) > 1 and prefix_ladder(cfg, variant) and not kw.get("states"):
        each = tuple(sorted(set(Ks)))
        got = dict(zip(each, _runs(cfg, prob, topo, each, seed, variant, **kw)))
    else:
        got = None
    out = []
    for K in Ks:
        out.append(got[K] if got is not None else run_one(cfg, prob, topo, K, seed, variant, **kw))
        if progress:
            progress(K)
    return out


def _runs(
    cfg: SuiteConfig,
    prob: ProblemProtocol,
    topo: Topology | list[Topology],
    Ks: tuple[int, ...],
    seed: int,
    variant: Variant,
    *,
    replicas: int | None = None,
    tau: int | None = None,
    delay: str | None = None,
    algorithm: str = "sgp",
    states: bool = False,
    regime: bool = False,
) -> list[dict[str, Any]]:
    """The summaries of the first K steps of one run of ``max(Ks)`` steps, for each K of ``Ks``
    (increasing; one K: :func:`run_one`). The step is that of the longest K: callers pass several
    only where it does not depend on K (:func:`prefix_ladder`)."""
    n = prob.n_nodes
    Kf = Ks[-1]
    gamma = _gamma(cfg, n, Kf, variant)
    if variant.extra_noise or variant.shared_noise or variant.bias:
        prob = Perturbed(prob, variant)
    tau = cfg.tau if tau is None else tau
    delay = cfg.delay if delay is None else delay
    own = topo if isinstance(topo, list) else None
    if algorithm == "sgp":
        topo = [wrap_topology(t, variant, seed) for t in own] if own else wrap_topology(topo, variant, seed)
    kw = dict(tau=tau, delay=delay) if algorithm == "sgp" else {}
    if algorithm == "sgp" and not variant.debias:
        kw["debias"] = False
    R = cfg.replicas if replicas is None else replicas
    if own and len(own) != R:
        raise ValueError(f"topo must hold one realisation per replica ({R}), got {len(own)}")
    # each K's own sample of steps (as its run alone would draw it); the run evaluates at their union
    samples = {
        K: metric_sample(K, R, cfg.metric_samples, seed, cfg.noise_stream)
        for K in Ks
        if cfg.metric_samples and K > cfg.metric_samples
    }
    if samples:
        mask = np.zeros((Kf + 1, R), dtype=bool)
        for K in Ks:
            if K in samples:
                mask[: K + 1] |= samples[K][0]
            else:  # a K that evaluates every step
                mask[: K + 1] = True
        kw["metric_mask"] = mask
    if states:  # keep at most about 2e6 numbers of states (every s-th iterate) for the Hessian fraction
        states = max(1, int(math.ceil((Kf + 1) * R * n * prob.dim / 2e6)))
    with warnings.catch_warnings(record=True) as caught:
        # the effective-step warning is a finding: kept in the run's record, not printed per run
        warnings.simplefilter("always", EffectiveStepWarning)
        if own:
            tr = stack_replicas(
                [
                    simulate_run(
                        cfg,
                        prob,
                        t,
                        Kf,
                        realisation_seed(seed, r),
                        gamma,
                        1,
                        algorithm=algorithm,
                        record_states=states,
                        **(dict(kw, metric_mask=kw["metric_mask"][:, r]) if samples else kw),
                    )
                    for r, t in enumerate(topo)
                ]
            )
        else:
            tr = simulate_run(cfg, prob, topo, Kf, seed, gamma, R, algorithm=algorithm, record_states=states, **kw)
    for w in caught:
        if not issubclass(w.category, EffectiveStepWarning):
            warnings.warn_explicit(w.message, w.category, w.filename, w.lineno)
    warning = next((str(w.message) for w in caught if issubclass(w.category, EffectiveStepWarning)), None)
    gns_all = np.asarray(tr.grad_norm_sq, float).reshape(Kf + 1, R).T  # (R, K+1)
    cons_all = np.asarray(tr.consensus, float).reshape(Kf + 1, R).T
    val_all = np.asarray(tr.value, float).reshape(Kf + 1, R).T
    wk_all = np.asarray(tr.weight_min, float).reshape(Kf + 1, R).T  # (R, K+1) weight floor of each step
    step_all = np.asarray(tr.step_sq, float).reshape(Kf, R).T if tr.step_sq is not None else None
    mass_all = np.asarray(tr.mass_error, float).reshape(Kf + 1, -1)
    werr_all = np.asarray(tr.weight_error, float).reshape(Kf + 1, -1)
    wmax_all = np.asarray(tr.weight_max, float).reshape(Kf + 1, -1)
    lost_all = None if getattr(tr, "mass_lost", None) is None else np.asarray(tr.mass_lost, float)
    scale = 1.0 + max(float(np.abs(tr.z).max()), tr.state_max)  # the round-off scale of the whole run
    L = float(prob.L)

    def summary(K: int) -> dict[str, Any]:
        """The JSON-ready summary of the run's first K steps."""
        gns, cons, val, wk = gns_all[:, : K + 1], cons_all[:, : K + 1], val_all[:, : K + 1], wk_all[:, : K + 1]
        step_sq = step_all[:, :K] if step_all is not None else None
        sample = samples.get(K)
        if sample is not None and len(Ks) > 1:  # this K's own steps only (the run evaluated the union)
            gns = np.where(sample[0].T, gns, np.nan)
        measured = gns if sample is None else gns[sample[0].T]  # NaN where not evaluated (sampled)
        if not (np.all(np.isfinite(measured)) and np.all(np.isfinite(cons))):
            raise SimulationDivergedError(
                f"simulation diverged: the measurements overflowed in the run at K = {K} (step_size = {gamma:.4g}; "
                f"problem L = {L:.4g}, so step_size <= 1/L = {1 / L:.4g} is the safe range)"
            )
        every = max(1, K // 256)
        if sample is None:
            stationarity, curve = gns[:, :K].mean(axis=1).tolist(), gns.mean(axis=0)[::every].tolist()
        else:
            stationarity, curve = _sampled(gns, sample[1], sample[2], K, every)
        wmin = float(np.min(wk))
        out = {
            "K": K,
            "n": n,
            "gamma": gamma,
            "tau": tau,
            "algorithm": algorithm,
            "stationarity": stationarity,  # (1/K) sum_{k<K} ||grad f(xbar^k)||^2 per replica (sampled: an estimate)
            "consensus": cons[:, :K].mean(axis=1).tolist(),  # (1/K) sum_{k<K} Xi^k per replica
            "consensus_max": float(cons[:, :K].mean(axis=0).max()),  # max_k of the replica mean of Xi^k
            # max_k of E[Xi^k] (min_i w_i^k)^2: the de-biasing step of (b2) with the weight floor of step k
            "consensus_w2_max": float((cons[:, :K] * wk[:, :K] ** 2).mean(axis=0).max()) if K else 0.0,
            "f0": val[:, 0].tolist(),
            "fK": val[:, K].tolist(),
            "mass_error": float(np.nanmax(mass_all[: K + 1])),
            "weight_error": float(np.max(werr_all[: K + 1])),
            # round-off scales with the largest numerator the run carried (a transient can dwarf the end)
            "mass_tol": 64 * EPS * K * n * scale,
            "weight_tol": 64 * EPS * K * n,
            "weight_min": wmin,
            "weight_max": float(np.max(wmax_all[: K + 1])),
            "effective_step": gamma / wmin if wmin > 0 else math.inf,
            # the engine's warning of the whole run; a prefix's by the same rule, on its own weight floor
            "effective_step_warning": warning if K == Kf else effective_step_message(gamma, wmin, L),
            "mass_lost": float(np.nanmax(lost_all[: K + 1])) if lost_all is not None else 0.0,
            "G2sq": float(step_sq.mean(axis=0).max()) if step_sq is not None and K else None,
            "grad_norm_sq_curve": curve,
            "consensus_curve": cons.mean(axis=0)[::every].tolist(),
            "curve_every": every,
        }
        if sample is not None:
            out["metric_samples"] = int(cfg.metric_samples)  # the stationarity is a sampled estimate
        if regime and wmin > 0 and gamma / wmin * L > 2.0:
            out.update(step_regime_record(wk[:, :K], gamma, L, shared=not own))
        if states and hasattr(prob, "min_hessian_eigenvalue") and tr.z_history is not None:
            zh = np.asarray(tr.z_history)[: (K - 1) // states + 1]  # iterates k < K (every states-th)
            out["indefinite_fraction"] = float(np.mean(np.asarray(prob.min_hessian_eigenvalue(zh)) < 0))
        return out

    return [summary(K) for K in Ks]


def step_regime_record(floors: np.ndarray, gamma: float, L: float, shared: bool = True) -> dict[str, float | int]:
    """How a run's weight floor meets the step-size regime: ``floors`` (replicas, K), the smallest
    push-sum weight of each step (:attr:`~sgpverify.engine.Trace.weight_min`). ``shared``: the
    replicas share one schedule, and the floor of a step is the smallest over them; else (each replica
    its own realisation of a random schedule) each replica is a run of its own, and the record is the
    median replica's (replicas ranked by their longest stretch, then their share; the upper median),
    the typical realisation of the schedule: the worst of R realisations would recede with R.

    - ``steps_out_share``: the share of steps k whose floor (over replicas) takes ``gamma / w_min^k``
      beyond 2/L;
    - ``steps_out_longest``: the longest stretch of consecutive such steps (a node's point is
      amplified by ``gamma L / w - 1 > 1`` at each; only consecutive ones compound);
    - ``regime_L``: the L these were judged with (the run's problem's);
    - ``weight_floor_share``: the :data:`REGIME_SHARE` quantile of the per-step floor, from which a
      longer run's share is estimated (gamma = sqrt(n/K) falls, the floor's distribution stays).
    """
    floors = np.asarray(floors, float)
    if not shared:
        each = sorted(
            (step_regime_record(row[None, :], gamma, L) for row in floors),
            key=lambda e: (e["steps_out_longest"], e["steps_out_share"]),
        )
        return each[len(each) // 2]
    floor = floors.min(axis=0)
    out = floor * 2.0 < gamma * L  # gamma / w > 2 / L
    longest = run = 0
    for o in out.tolist():
        run = run + 1 if o else 0
        longest = max(longest, run)
    return {
        "regime_L": float(L),
        "steps_out_share": float(np.mean(out)) if out.size else 0.0,
        "steps_out_longest": int(longest),
        "weight_floor_share": float(np.quantile(floor, REGIME_SHARE)) if floor.size else 0.0,
    }


def problem_constants(prob: ProblemProtocol) -> dict[str, float | None]:
    c = {k: float(getattr(prob, k)) for k in ("L", "sigma2", "zeta2", "f_lower")}
    fs = getattr(prob, "f_star", None)
    c["f_star"] = None if fs is None else float(fs)
    return c
