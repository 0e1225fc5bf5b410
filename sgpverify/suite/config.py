"""The suite's configuration: :class:`SuiteConfig`, the presets and their validation."""

from __future__ import annotations

import dataclasses
import math
from typing import TYPE_CHECKING, Any

import numpy as np

from ..usercode import check_outputs
from ..validation import check_float, check_int, check_magnitude, check_memory, unknown_key
from .setting import label_of, resolve_problem, resolve_topology

if TYPE_CHECKING:
    import os
    from collections.abc import Collection, Mapping

__all__ = ["SuiteConfig", "QUICK", "FULL", "PRESETS", "LADDERS", "config_from_dict", "validate_config", "longest_run"]


@dataclasses.dataclass(frozen=True)
class SuiteConfig:
    """Everything the suite runs: the setting (problem, schedules, delays) and the sizes.

    ``problem`` is a built-in name, ``"MODULE:ATTR"`` (a callable
    ``ATTR(n=..., d=..., seed=...)`` returning a Problem-protocol object) or a
    callable of that form; ``problem_options`` are passed to built-ins.
    ``topologies`` are schedule names (:data:`sgpverify.graphs.TOPOLOGY_NAMES`)
    or callables ``f(n, seed) -> Topology``; the default pairs the paper's
    exponential graph (doubly stochastic: weights stay 1) with
    ``exponential-irregular`` (:func:`sgpverify.graphs.irregular_exponential`:
    unequal in-degrees, push-sum weights move, in about [0.45, 1.65]). ``tau``/``delay`` apply to every SGP
    run of the rate, speedup, Theorem 1 and bound experiments. ``rows`` (a torus) must divide ``n``;
    at the other n of the speedup and complexity ladders the torus takes these rows where they
    divide that n, else its default (the divisor of n nearest sqrt(n)). ``x0 = 0`` starts
    at a saddle of the default problem, so that a reported fraction of visited
    points has an indefinite Hessian. ``noise_stream`` (0: the seed's own) selects an independent
    stream of gradient noise and replica seeds for the same problem and schedules: the rounds of
    ``verify --settle`` use 1, 2, ..., so that each round's verdict rests on fresh noise.
    ``own_realisations``: on a random schedule the rate runs give each replica its own realisation
    of the schedule (:func:`~sgpverify.suite.setting.realisations`; intervals over the schedule
    family, at 4-11 times the cost); False (the default): the replicas share one graph sequence.
    ``metric_samples`` (0, the default: every step): a run longer than this many steps evaluates
    ``full_grad`` and ``value`` at one step drawn from each of this many equal blocks, per replica
    (:func:`~sgpverify.suite.runs.metric_sample`), and its stationarity average is the block-weighted
    mean of those (unbiased; its sampling error is within the replicas' spread). The rounds of
    ``verify --settle`` use :data:`~sgpverify.suite.settle.ROUND_METRIC_SAMPLES` where it is 0.
    """

    name: str = "quick"
    n: int = 16
    d: int = 10
    problem: object = "quadratic-cosine"
    alpha: float = 0.5
    heterogeneity: float = 1.0
    sigma: float = 1.0
    topologies: tuple = ("exponential", "exponential-irregular")
    peers: int = 1
    edge_prob: float | None = None
    rows: int | None = None
    tau: int = 0
    delay: str = "fixed"
    x0: float = 0.0
    Ks: tuple = (256, 512, 1024, 2048, 4096)
    rate_replicas: int = 32
    replicas: int = 8
    speedup_replicas: int = 16
    speedup_ns: tuple = (4, 8, 16, 32)
    speedup_Ks: tuple = (1024, 2048, 4096)
    descent_Ks: tuple = (512, 2048)
    descent_tau: int = 2
    taus: tuple = (0, 1, 2, 4)
    delay_Ks: tuple = (512, 1024, 2048, 4096)
    delay_replicas: int = 32
    baseline_Ks: tuple = (512, 1024, 2048, 4096)
    compare_topologies: tuple = ("ring-bidir", "erdos-renyi")
    topology_Ks: tuple = (512, 1024, 2048, 4096, 8192)
    topology_replicas: int = 16
    scaling_factor: float = 2.0
    scaling_Ks: tuple = (256, 512, 1024, 2048, 4096)
    scaling_replicas: int = 16
    complexity_ns: tuple = (4, 8, 16, 32)
    complexity_budgets: tuple = (4096, 8192, 16384, 32768)
    complexity_replicas: int = 16
    theorem_K_cap: int = 160000
    theorem_replicas: int = 2
    mixing_horizon: int = 200
    bound_horizon: int = 400
    pep_n: int = 4
    pep_Ks: tuple = (4,)
    pep_taus: tuple = (0, 1)
    noise_stream: int = 0
    own_realisations: bool = False
    metric_samples: int = 0

    def to_dict(self) -> dict[str, Any]:
        d = dataclasses.asdict(self)
        d["problem"] = label_of(self.problem)
        d["topologies"] = [label_of(t) for t in self.topologies]
        return d


#: The fewest blocks a sampled stationarity average may have (``metric_samples``).
MIN_METRIC_SAMPLES = 64

QUICK = SuiteConfig()
FULL = SuiteConfig(
    name="full",
    Ks=(256, 512, 1024, 2048, 4096, 8192, 16384),
    replicas=16,
    speedup_ns=(4, 8, 16, 32, 64),
    speedup_Ks=(2048, 4096, 8192, 16384),
    descent_Ks=(512, 2048, 8192),
    delay_Ks=(512, 1024, 2048, 4096, 8192),
    baseline_Ks=(512, 1024, 2048, 4096, 8192),
    topology_Ks=(512, 1024, 2048, 4096, 8192, 16384),
    scaling_Ks=(256, 512, 1024, 2048, 4096, 8192),
    complexity_budgets=(4096, 8192, 16384, 32768, 65536),
    theorem_K_cap=400000,
    theorem_replicas=4,
    mixing_horizon=400,
)
PRESETS = {"quick": QUICK, "full": FULL}


_FIELDS = {f.name for f in dataclasses.fields(SuiteConfig)}


def longest_run(cfg: SuiteConfig) -> int:
    """The most steps a run of the configuration's ladders takes (every K ladder, and the budgets
    T // n of the complexity ladder); the Theorem 1 run's length, decided by the measured
    constants, comes on top where it is longer (:func:`sgpverify.suite.experiments.bounds.theorem_run_length`).

    Examples
    --------
    >>> longest_run(QUICK)
    8192
    """
    ladders = (cfg.Ks, cfg.speedup_Ks, cfg.descent_Ks, cfg.delay_Ks, cfg.baseline_Ks, cfg.topology_Ks, cfg.scaling_Ks)
    budgets = [T // n for T in cfg.complexity_budgets for n in cfg.complexity_ns]
    return int(max([max(v) for v in ladders if len(v)] + budgets))


def config_from_dict(
    over: Mapping[str, Any], base: SuiteConfig = QUICK, source: str | os.PathLike[str] | None = None
) -> SuiteConfig:
    """A :class:`SuiteConfig` from ``base`` with overrides; unknown keys are rejected.

    The error names the key and the closest valid name. A list field
    (``Ks``, ``topologies``, ...) must be given as a list (a TOML array): a
    bare string or number there is refused. The values are checked by
    :func:`validate_config`.
    """
    for key in over:
        if key not in _FIELDS:
            raise unknown_key("config keys (SuiteConfig fields)", key, sorted(_FIELDS), source)
    for key, v in over.items():
        if key in _LIST_FIELDS and not isinstance(v, (list, tuple)):
            raise TypeError(f"{key} must be a list, got {v!r}" + (f" (in {source})" if source else ""))
    over = {k: tuple(v) if isinstance(v, list) else v for k, v in over.items()}
    return dataclasses.replace(base, **over)


#: The fields holding lists (given as TOML arrays).
_LIST_FIELDS = {f.name for f in dataclasses.fields(SuiteConfig) if isinstance(f.default, tuple)}
#: The K and n ladders: at least 2 increasing positive integers each (descent_Ks: at least 1).
LADDERS = (
    "Ks",
    "speedup_ns",
    "speedup_Ks",
    "descent_Ks",
    "delay_Ks",
    "baseline_Ks",
    "topology_Ks",
    "scaling_Ks",
    "complexity_ns",
    "complexity_budgets",
)


def _ladder(name, v):
    least = 1 if name in ("descent_Ks", "pep_Ks") else 2
    ints = all(isinstance(x, int) and not isinstance(x, bool) for x in v)
    if len(v) < least or not ints or any(x < 1 for x in v) or list(v) != sorted(set(v)):
        what = f"at least {least} increasing positive integer" + ("s" if least > 1 else "")
        raise ValueError(f"{name} must be {what}, got {list(v)}")


def _checks(cfg):
    """``[(key, check)]``: every check of :func:`validate_config`, named by the key it is about."""
    from .. import graphs

    def num(name, **kw):
        return name, lambda: check_float(name, getattr(cfg, name), **kw)

    def integer(name, least):
        return name, lambda: check_int(name, getattr(cfg, name), min_value=least)

    def name_check():
        if not isinstance(cfg.name, str) or not cfg.name:
            raise ValueError(f"name must be a non-empty string, got {cfg.name!r}")

    def own_realisations():
        if not isinstance(cfg.own_realisations, (bool, np.bool_)):
            raise ValueError(f"own_realisations must be true or false, got {cfg.own_realisations!r}")

    def metric_samples():
        m = check_int("metric_samples", cfg.metric_samples, min_value=0)
        if 0 < m < MIN_METRIC_SAMPLES:
            raise ValueError(
                f"metric_samples must be 0 (every step) or an integer >= {MIN_METRIC_SAMPLES}, "
                f"got {cfg.metric_samples!r}"
            )

    def delay():
        if cfg.delay not in ("fixed", "random"):
            raise ValueError(f"delay must be one of fixed, random, got {cfg.delay!r}")

    def edge_prob():
        if cfg.edge_prob is not None:
            check_float("edge_prob", cfg.edge_prob, low=0.0, high=1.0, low_open=True)

    def rows():
        if cfg.rows is not None:
            check_int("rows", cfg.rows, min_value=1)
            if cfg.n % cfg.rows:  # the main runs' torus: rows x (n / rows)
                raise ValueError(f"rows must divide n = {cfg.n}, got {cfg.rows}")

    def taus():
        t = cfg.taus
        ints = all(isinstance(x, int) and not isinstance(x, bool) for x in t)
        if not t or not ints or any(x < 0 for x in t) or list(t) != sorted(set(t)) or t[0] != 0 or len(t) < 2:
            raise ValueError(
                f"taus must be increasing integers >= 0 starting with 0 (the undelayed reference) and "
                f"at least one delay, got {list(t)}"
            )

    def pep_taus():
        t = cfg.pep_taus
        ints = all(isinstance(x, int) and not isinstance(x, bool) for x in t)
        if not t or not ints or any(x < 0 for x in t) or list(t) != sorted(set(t)):
            raise ValueError(f"pep_taus must be increasing integers >= 0, at least one, got {list(t)}")

    def budgets():
        small = [(n, T) for n in cfg.complexity_ns for T in cfg.complexity_budgets if T // n < 2]
        if small:
            raise ValueError(
                f"complexity_budgets must give every n of complexity_ns at least 2 iterations (T // n >= 2), "
                f"got T = {small[0][1]} for n = {small[0][0]}"
            )

    def scaling_factor():
        sf = cfg.scaling_factor
        if isinstance(sf, bool) or not isinstance(sf, (int, float)) or not math.isfinite(sf) or sf <= 0 or sf == 1:
            raise ValueError(f"scaling_factor must be a finite number > 0 other than 1, got {sf!r}")

    def schedules(key):
        def check():
            specs = getattr(cfg, key)
            if key == "topologies" and not specs:
                raise ValueError("topologies must name at least one schedule, got none")
            for t in specs:
                resolve_topology(t, cfg)(cfg.n, 0)

        return key, check

    def applies(key, param, family):
        # a setting no schedule of the configuration takes would be ignored: refused instead
        def check():
            if getattr(cfg, key) is None:
                return
            names = [t for t in cfg.topologies + cfg.compare_topologies if isinstance(t, str)]
            if not any(graphs.takes(t, param) for t in names if t in graphs.TOPOLOGY_NAMES):
                raise ValueError(
                    f"{key} applies to {family} schedules only, got {key} = {getattr(cfg, key)} with schedules "
                    f"{', '.join(names) or 'none by name'}"
                )

        return key, check

    def problem():
        # what the user's methods return, checked before any unit runs or is cached
        prob = resolve_problem(cfg.problem, cfg)(cfg.n, 0)
        x0 = np.full(cfg.d, float(cfg.x0))
        check_outputs(prob, np.broadcast_to(x0, (cfg.n, cfg.d)), x0[None, :])

    out = [("name", name_check), integer("n", 2), integer("d", 1), num("alpha", low=0.0)]
    out += [num("heterogeneity", low=0.0), num("sigma", low=0.0), num("x0"), integer("peers", 1)]
    out += [("edge_prob", edge_prob), ("rows", rows), integer("tau", 0), ("delay", delay), integer("descent_tau", 0)]
    for name in ("replicas", "rate_replicas", "speedup_replicas", "delay_replicas"):
        out.append(integer(name, 3))
    for name in ("topology_replicas", "scaling_replicas", "complexity_replicas"):
        out.append(integer(name, 3))
    out += [integer("theorem_replicas", 1), integer("theorem_K_cap", 1), integer("noise_stream", 0)]
    out += [("metric_samples", metric_samples)]
    out += [integer("mixing_horizon", 1), integer("bound_horizon", 1), ("own_realisations", own_realisations)]
    out += [integer("pep_n", 1), ("pep_Ks", lambda: _ladder("pep_Ks", cfg.pep_Ks)), ("pep_taus", pep_taus)]
    out += [(name, lambda name=name: _ladder(name, getattr(cfg, name))) for name in LADDERS]
    out += [("taus", taus), ("complexity_budgets", budgets), ("scaling_factor", scaling_factor)]
    out += [schedules("compare_topologies"), schedules("topologies")]
    out += [applies("rows", "rows", "torus"), applies("edge_prob", "p", "erdos-renyi")]
    out += [("sigma", lambda: _magnitude(cfg, "sigma")), ("x0", lambda: _magnitude(cfg, "x0"))]
    out += [("Ks", lambda: _memory(cfg)), ("problem", problem)]
    return out


def _sizes(cfg):
    """``(n, replicas, K)``: the most nodes, replicas and steps of any run of ``cfg`` (never all
    in one run: an upper estimate)."""
    ns = [cfg.n, *cfg.speedup_ns, *cfg.complexity_ns]
    reps = [getattr(cfg, f.name) for f in dataclasses.fields(cfg) if f.name.endswith("replicas")]
    return max(ns), max(reps), longest_run(cfg)


def _magnitude(cfg, name):
    """x0 and sigma within float64: the squared norms a run sums over nodes, coordinates and steps
    (``n d K`` terms of ``x0^2``, of ``sigma^2``) stay finite."""
    n, _, K = _sizes(cfg)
    check_magnitude(name, float(getattr(cfg, name)), float(n) * cfg.d * (K + 1))


def _memory(cfg):
    """The longest run with the most nodes and replicas must fit in memory (before any work)."""
    from ..engine import memory_estimate

    n, R, K = _sizes(cfg)
    need = memory_estimate(n, cfg.d, replicas=R, n_iter=K, tau=max(cfg.tau, max(cfg.taus)))
    check_memory("the plan's longest run", need, f"n = {n}, d = {cfg.d}, {R} replicas, K = {K}")


def validate_config(
    cfg: SuiteConfig,
    source: str | os.PathLike[str] | None = None,
    keys: Collection[str] | None = None,
    options: Mapping[str, str] | None = None,
) -> SuiteConfig:
    """Check a configuration before running anything (errors name the key and the value).

    The one validation of suite settings: ``sgpverify verify`` (preset,
    ``--config`` file and options) and ``sgpverify run`` (each experiment
    file's ``[config]``) both call it before any work.

    Parameters
    ----------
    cfg : SuiteConfig
    source : path, optional
        The file the settings come from: an error about one of them ends with
        ``(in FILE)``.
    keys : collection of str, optional
        The keys ``source`` set (default: every key), so that an error about a
        key set elsewhere (an option) does not name the file.
    options : mapping, optional
        ``{key: option}`` for the keys set by command-line options: an error
        about one of them ends with ``(from --option)``.

    Raises
    ------
    ValueError, TypeError
        Naming the first key whose value is refused, the constraint and the
        value, e.g. ``Ks must be at least 2 increasing positive integers, got
        [256, nan] (in rates.toml)``.

    Examples
    --------
    >>> validate_config(config_from_dict({"Ks": [256, 128]}), source="r.toml")
    Traceback (most recent call last):
    ...
    ValueError: Ks must be at least 2 increasing positive integers, got [256, 128] (in r.toml)
    """
    for key, check in _checks(cfg):
        try:
            check()
        except (TypeError, ValueError) as exc:
            if options and key in options:
                where = f"from {options[key]}"
            elif source is not None and (keys is None or key in keys):
                where = f"in {source}"
            else:
                raise
            cls = TypeError if isinstance(exc, TypeError) else ValueError
            raise cls(f"{exc} ({where})") from None
    return cfg
