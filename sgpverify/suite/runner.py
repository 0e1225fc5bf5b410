"""Running the suite: plan the units, run them on any executor, evaluate the claims."""

from __future__ import annotations

import dataclasses
import os
import time
from typing import TYPE_CHECKING, Any, Callable, Iterable

from ..sweep import Unit, UnitCache, connect, run_units, unit_key
from ..usercode import user_error
from ..validation import check_float, check_int
from .claims import CHECK_NAMES, CLAIMS, load_file
from .config import PRESETS, QUICK, SuiteConfig, config_from_dict, validate_config
from .cost import control_mains
from .departures import NONE, Variant, vacuous
from .experiments import EXPERIMENTS, needs_of, run_experiments
from .records import Check, CheckError, Claim, SuiteResult, code_of, control_record
from .setting import setting_code, upload_files
from .settle import DEFAULT_BUDGET
from .settle import settle as settle_checks

if TYPE_CHECKING:
    from distributed import Client

__all__ = [
    "plan_units",
    "run_suite",
    "verify",
    "evaluate",
    "make_check",
    "run_unit",
    "suite_unit",
    "control_data",
    "needs_of",
    "refuted_constants",
]


def refuted_constants(data: dict) -> dict[str, str]:
    """``{constant: "declared L refuted (estimate >= 1.6 > 0.475)"}``: the declared constants the
    declared-constants experiment refuted (none where it did not run or had an error), and ``"bias"``
    where it found the stochastic gradients biased."""
    got = data.get("declared")
    if not isinstance(got, dict) or "error" in got:
        return {}
    out = {}
    for name in ("L", "sigma2", "zeta2", "f_lower", "f_star", "bias"):
        c = got.get(name)
        if isinstance(c, dict) and c.get("refuted"):
            if name == "bias":
                out[name] = f"the stochastic gradients are biased (mean offset >= {c['estimate']:.3g})"
                continue
            if name in ("f_lower", "f_star"):
                why = f"lowest value seen {c['estimate']:.3g} < {c['declared']:.3g}"
            elif c.get("estimate") is None:
                why = "the noise variance does not exist"
            else:
                why = f"estimate >= {c['estimate']:.3g} > {c['declared']:.3g}"
            out[name] = f"declared {name} refuted ({why})"
    return out


def diverged_where(claim: Claim, data: dict) -> str:
    """``"diverged in unit rates at iteration 300"``: the first experiment of the claim (or one it takes
    data from) whose run failed, and the iteration where the engine named one."""
    for k in list(claim.experiments) + needs_of(claim.experiments):
        got = data.get(k, {})
        if "error" in got and not got.get("not_applicable"):
            at = f" at iteration {got['iteration']}" if got.get("iteration") is not None else ""
            return f"diverged in unit {k}{at}" if "diverged" in got["error"] else f"failed in unit {k}: {got['error']}"
    return "a run diverged"


def evaluate(claim: Claim, cfg: SuiteConfig, data: dict) -> dict:
    """The check's result dict on ``data``: the claim's check, or inconclusive (saying why)
    where an experiment it reads, or one such an experiment took its data from, has an error."""
    errors = [
        f"{k}: {data[k]['error']}"
        for k in claim.experiments
        if k in data and "error" in data[k] and not data[k].get("not_applicable")
    ]
    errors += [f"{k}: {data[k]['error']}" for k in needs_of(claim.experiments) if "error" in data.get(k, {})]
    na = [f"{k}: {data[k]['error']}" for k in claim.experiments if data.get(k, {}).get("not_applicable")]
    if na and len(na) == len([k for k in claim.experiments if k in data]):  # else the check uses the others
        first = data[next(k for k in claim.experiments if data.get(k, {}).get("not_applicable"))]["error"]
        return dict(
            verdict="not applicable",
            measured="not applicable: " + first.split(" (")[0].split("; ")[0],
            predicted="-",
            detail="; ".join(na),
        )
    if errors:
        return dict(
            verdict="inconclusive",
            measured=diverged_where(claim, data),
            predicted="-",
            detail="; ".join(errors) + " (outside the step-size regime of the analysis: see the effective "
            "step gamma / w_min against 1/L)",
        )
    refuted = refuted_constants(data)
    hit = [refuted[c] for c in claim.uses if c in refuted]
    if hit:
        relies = [c for c in claim.uses if c != "bias"]
        return dict(
            verdict="inconclusive",
            measured="; ".join(hit),
            predicted="-",
            detail="the check relies on "
            + " and ".join(
                ([", ".join(relies) + " as the problem declares them"] if relies else [])
                + (["unbiased stochastic gradients (Assumption 2)"] if "bias" in claim.uses else [])
            )
            + ", and the problem itself refutes "
            + "; ".join(hit)
            + " (declared-constants): no longer run settles it",
            extra={"refuted": [c for c in claim.uses if c in refuted]},
        )
    try:
        return claim.check(cfg, data)
    except Exception as exc:  # a bug, not degenerate data (the checks return inconclusive on those)
        raise CheckError(
            f"the check {claim.name} raised {type(exc).__name__}: {exc} (on the data of experiments: "
            f"{', '.join(claim.experiments)})"
        ) from exc


def make_check(claim: Claim, cfg: SuiteConfig, data: dict) -> Check:
    """The :class:`Check` of ``claim`` on ``data``."""
    res = evaluate(claim, cfg, data)
    return Check(
        name=claim.name,
        verdict=res["verdict"],
        measured=res["measured"],
        predicted=res["predicted"],
        criterion=claim.criterion,
        detail=res["detail"],
        code=code_of(claim.check),
        extra=res.get("extra", {}),
    )


def control_data(key: str, main: dict, ctl: dict) -> dict:
    """A control unit's data completed with what it shares with the main run (the experiment's
    ``complete_control``: the delays' tau = 0 reference, the topologies' reference schedule)."""
    complete = EXPERIMENTS[key].complete_control
    if complete is None or "error" in main or "error" in ctl:
        return ctl
    return complete(main, ctl)


def run_unit(
    cfg: SuiteConfig, seed: int, key: str, variant: Variant, needed: dict | None, source: str | None = None
) -> dict:
    """One independent unit of work: experiment ``key`` under ``variant`` (``needed``: the main
    data of the experiments it needs, or None). Deterministic in (cfg, seed, key, variant), so any
    executor gives the same bits; module-level, so picklable. ``source``: the claims file that
    declares the experiment, loaded first where this process has not (a fresh worker)."""
    if source is not None and key not in EXPERIMENTS:
        load_file(source)
    try:
        return run_experiments(cfg, seed, (key,), variant, None, base=needed)[key]
    except Exception as exc:  # named as the user's where it was raised in their code (crosses processes whole)
        err = user_error(exc)
        if err is None or err is exc:
            raise
        raise err from None


def plan_units(
    config: SuiteConfig = QUICK, controls: bool = False, only: Iterable[str] | None = None
) -> list[tuple[str, Variant]]:
    """The independent units of :func:`run_suite`: ``(experiment key, Variant)`` pairs, in run order.

    Found from :data:`CLAIMS` (the experiments of the chosen checks and of their
    controls) and the order of :data:`EXPERIMENTS`; the main units of what those
    experiments need are among them (Theorem 1's units need the main mixing
    data), and so are the experiments that always run (the weights figure).

    Examples
    --------
    >>> [k for k, v in plan_units(only=["theorem1-bound"])]
    ['mixing', 'theorem', 'weights', 'declared']
    """
    if only is not None:
        unknown = sorted(set(only) - set(CHECK_NAMES))
        if unknown:
            raise ValueError(f"check must be one of {', '.join(CHECK_NAMES)}, got {unknown[0]!r}")
    claims = [c for c in CLAIMS if only is None or c.name in set(only)]
    keys = set()
    for c in claims:
        keys.update(c.experiments)
    while not keys >= set(needs_of(keys)):
        keys.update(needs_of(keys))
    keys.update(k for k, exp in EXPERIMENTS.items() if exp.always)
    order = list(EXPERIMENTS) + sorted(keys - set(EXPERIMENTS))
    units = [(k, NONE) for k in order if k in keys]
    if controls:
        for c in claims:
            for k in c.control.experiments:
                if (k, c.control.variant) not in units:
                    units.append((k, c.control.variant))
    return units


def _unit_cost(unit):
    key, variant = unit
    main, ctl = EXPERIMENTS[key].cost
    return main if variant == NONE else ctl


def suite_unit(
    config: SuiteConfig, seed: int, k: str, v: Variant, needed: dict | None, setting: dict | None, cache: object
) -> Unit:
    """The :class:`~sgpverify.sweep.Unit` of experiment ``k`` under ``v``, with its cache key
    (None without a cache, or when the user's code in the setting is not pinned by a file)."""

    key = None
    exp = EXPERIMENTS[k]
    if cache is not None and setting is not None:
        identity = {
            "kind": "verify",
            "config": config.to_dict(),
            "setting": setting,
            "seed": seed,
            "experiment": k,
            "variant": dataclasses.asdict(v),
        }
        if exp.source is not None:  # a declared claim: its file's code is the user's, not in our source hash
            identity["declared"] = exp.digest
        try:
            key = unit_key(identity)
        except TypeError:  # a setting value that is not JSON: not cached
            key = None
    return Unit(f"{k} ({v.name})", run_unit, (config, seed, k, v, needed, exp.source), key)


def run_suite(
    config: SuiteConfig = QUICK,
    seed: int = 0,
    progress: Callable[[str], None] | None = None,
    controls: bool = False,
    only: Iterable[str] | None = None,
    workers: int = 1,
    scheduler: str | Client | None = None,
    cache: str | os.PathLike | None = None,
    settle: bool = False,
    budget: float | None = None,
    controls_only: bool = False,
) -> SuiteResult:
    """Run every experiment and derive the checks (and, with ``controls``, their controls).

    Parameters
    ----------
    config : SuiteConfig
        ``QUICK`` (about three minutes on 2 cores with controls), ``FULL``, or a
        configuration of the user's setting (see :func:`verify`).
    seed : int
        Seed of problems, topologies and gradient noise.
    progress : callable, optional
        Called with a short message after each finished unit (:func:`plan_units`),
        ``"NAME: cached"`` for a unit loaded from the cache.
    controls : bool
        Also run each check on its negative control.
    only : iterable of str, optional
        Names of the checks to run (default all).
    workers : int
        Local processes for the independent units (experiment x control); 1 runs
        serially. The bits do not depend on it: each unit is deterministic in its
        configuration, seed and variant. A setting that cannot be pickled (a
        lambda as problem or topology) runs serially.
    scheduler : str or distributed.Client, optional
        Run the units on this dask.distributed cluster instead (an address such
        as ``"tcp://HOST:8786"``; needs ``pip install 'sgpverify[cluster]'``).
        Same bits where every worker has this process's numeric fingerprint;
        workers on another numeric platform are used with a
        :class:`~sgpverify.errors.PlatformMismatchWarning`, their units are
        not cached and the result's ``foreign`` names them.
    cache : str or path, optional
        Directory of the unit cache (:class:`sgpverify.sweep.UnitCache`): finished
        units are loaded from it and new ones stored as they finish, so a run
        that was interrupted resumes. Keyed by configuration, seed, experiment,
        variant, sgpverify's source, library versions and numeric platform
        fingerprint (and the source file of a user's problem or schedule; a
        lambda disables the cache). Default: no cache.
    settle : bool
        After the planned run, give every inconclusive check (and every control not detected) the
        evidence it lacks, in rounds with error control, within ``budget``
        (:mod:`sgpverify.suite.settle`). The checks are those after settling; ``result.settle``
        records the rounds and the verdicts before them. Nothing runs where every check is decisive.
    budget : float, optional
        Minutes of wall time for settling (default 20); only with ``settle``.
    controls_only : bool
        With ``controls``: a settling round for controls that the planned run missed on checks it
        judged. The main units that only such a control's own evaluation would replace are left out
        (:func:`~sgpverify.suite.cost.control_mains`); a check whose main data are then missing is
        not judged again (inconclusive, "not rerun"), and its control is judged as always.
    """
    workers = check_int("workers", workers, min_value=1)
    if not isinstance(settle, bool):
        raise TypeError(f"settle must be True or False, got {settle!r}")
    if budget is not None:
        if not settle:
            raise ValueError(f"budget applies with settle=True, got budget = {budget!r} and settle = {settle!r}")
        budget = check_float("budget", budget, low=0.0, low_open=True)
    if scheduler is not None and workers > 1:
        raise ValueError(
            f"workers and scheduler are exclusive (the cluster has its own workers), got "
            f"workers = {workers} and scheduler = {scheduler!r}"
        )
    if controls_only and not controls:
        raise ValueError("controls_only applies with controls=True")
    t0 = time.perf_counter()
    units = plan_units(config, controls, only)
    claims = [c for c in CLAIMS if only is None or c.name in set(only)]
    left_out = control_mains(claims) if controls_only else set()
    units = [(k, v) for k, v in units if not (v == NONE and k in left_out)]
    store = UnitCache(cache) if cache is not None else None
    setting = setting_code(config) if store is not None else None
    client, owned = connect(scheduler) if scheduler is not None else (None, False)
    foreign = {}  # units computed on a worker of another numeric platform: not cached
    try:
        ex = dict(
            workers=workers,
            scheduler=client,
            cache=store,
            progress=progress,
            files=upload_files(config),
            foreign=foreign,
        )
        results = {}
        # what other units need comes first (the theorem units need the main mixing data: about a second)
        first = [(k, NONE) for k in needs_of(k for k, _ in units) if (k, NONE) in units]
        first_units = [suite_unit(config, seed, k, v, None, setting, store) for k, v in first]
        if first:
            results.update(zip(first, run_units(first_units, **ex)))
        other = {k for (k, _), u in zip(first, first_units) if u.name in foreign}

        def needed(k):
            return {need: results[(need, NONE)] for need in EXPERIMENTS[k].needs} or None

        def cached(k):  # a unit computed from another platform's data has its bits too: not cached
            return None if other & set(EXPERIMENTS[k].needs) else store

        # longest first, so that the last units to finish are short ones (results go back by unit)
        todo = sorted((u for u in units if u not in results), key=_unit_cost, reverse=True)
        done = run_units([suite_unit(config, seed, k, v, needed(k), setting, cached(k)) for k, v in todo], **ex)
        results.update(zip(todo, done))
    finally:
        if owned:
            client.close()
    data = {k: results[(k, NONE)] for k, v in units if v == NONE}
    checks = []
    for claim in claims:
        if left_out & set(claim.experiments):
            chk = Check(
                claim.name,
                "inconclusive",
                "not rerun",
                "-",
                claim.criterion,
                "a round for its control only",
                code_of(claim.check),
            )
        else:
            chk = make_check(claim, config, data)
        if controls:
            ctl = claim.control
            cdata = dict(data)
            cdata.update(
                {
                    k: control_data(k, data[k], results[(k, ctl.variant)]) if k in data else results[(k, ctl.variant)]
                    for k in ctl.experiments
                }
            )
            none = vacuous(ctl.variant, {k: data[k] for k in ctl.experiments if k in data})
            chk = dataclasses.replace(chk, control=control_record(claim, chk, evaluate(claim, config, cdata), none))
        checks.append(chk)
    if controls:
        data["controls"] = {f"{v.name}:{k}": results[(k, v)] for k, v in units if v != NONE}
    result = SuiteResult(
        config=config,
        seed=seed,
        checks=tuple(checks),
        data=data,
        seconds=time.perf_counter() - t0,
        controls=controls,
        foreign=foreign,
    )
    if not settle:
        return result

    def one_round(sub: SuiteConfig, only: list[str], controls: bool, controls_only: bool = False) -> SuiteResult:
        return run_suite(
            sub,
            seed=seed,
            progress=progress,
            controls=controls,
            only=only,
            workers=workers,
            scheduler=scheduler,
            cache=cache,
            controls_only=controls_only,
        )

    settled, record = settle_checks(
        result, one_round, budget=DEFAULT_BUDGET if budget is None else budget, progress=progress, workers=workers
    )
    return dataclasses.replace(result, checks=settled, settle=record, seconds=time.perf_counter() - t0)


def verify(
    problem: str | Callable | None = None,
    topology: str | Callable | None = None,
    *,
    tau: int | None = None,
    delay: str | None = None,
    preset: str = "quick",
    seed: int = 0,
    controls: bool = False,
    nodes: int | None = None,
    dim: int | None = None,
    progress: Callable[[str], None] | None = None,
    workers: int = 1,
    scheduler: str | Client | None = None,
    cache: str | os.PathLike | None = None,
    settle: bool = False,
    budget: float | None = None,
    method: str | None = None,
    **settings: Any,
) -> SuiteResult:
    """Does SGP behave as its theory says on *this* problem and schedule?

    Parameters
    ----------
    problem : str or callable, optional
        A built-in problem name, ``"MODULE:ATTR"``, or a callable
        ``f(n=..., d=..., seed=...)`` returning a Problem-protocol object.
        Default: the preset's (QuadraticCosine).
    topology : str or callable, optional
        A schedule name or a callable ``f(n, seed) -> Topology``; replaces the
        preset's pair of schedules. Default: the preset's.
    tau, delay : optional
        Maximum delay and delay model ("fixed" or "random") of every SGP run.
    preset : {"quick", "full"}
    seed : int
    controls : bool
        Also run every check's negative control.
    workers : int
        Local processes (see :func:`run_suite`); the result does not depend on it.
    scheduler : str or distributed.Client, optional
        Address of a dask.distributed scheduler to run the units on (see :func:`run_suite`).
    cache : str or path, optional
        Unit cache directory (see :func:`run_suite`); default none.
    settle, budget : optional
        Settle the inconclusive checks within ``budget`` minutes (see :func:`run_suite`).
    nodes, dim : int, optional
        n and d of the main experiments.
    method : str, optional
        Also check the built-in claims of this method (``"push-diging"``; :mod:`sgpverify.method_claims`),
        registered as a ``--claims`` file's are (``only=`` may name them).
    **settings
        Any other :class:`SuiteConfig` field.

    Returns
    -------
    SuiteResult

    Examples
    --------
    >>> import sgpverify as sv
    >>> res = sv.verify(topology="ring-bidir", preset="quick", only=["mixing-constants"])
    >>> [(c.name, c.verdict) for c in res.checks]
    [('mixing-constants', 'pass')]
    """
    if preset not in PRESETS:
        raise ValueError(f"preset must be one of {', '.join(PRESETS)}, got {preset!r}")
    only = settings.pop("only", None)
    if method is not None:
        from ..method_claims import check_method, load

        load(check_method(method))
    over = dict(settings)
    if problem is not None:
        over["problem"] = problem
    if topology is not None:
        over["topologies"] = (topology,)
    if tau is not None:
        over["tau"] = tau
    if delay is not None:
        over["delay"] = delay
    if nodes is not None:
        over["n"] = nodes
    if dim is not None:
        over["d"] = dim
    cfg = config_from_dict(over, PRESETS[preset])
    validate_config(cfg)
    return run_suite(
        cfg,
        seed=seed,
        progress=progress,
        controls=controls,
        only=only,
        workers=workers,
        scheduler=scheduler,
        cache=cache,
        settle=settle,
        budget=budget,
    )
