"""The suite's configuration: :class:`SuiteConfig`, the presets and their validation."""

from __future__ import annotations

import dataclasses
import math
from typing import TYPE_CHECKING, Any

from ..validation import check_int, unknown_key
from .setting import label_of, resolve_problem, resolve_topology

if TYPE_CHECKING:
    import os
    from collections.abc import Mapping

__all__ = ["SuiteConfig", "QUICK", "FULL", "PRESETS", "config_from_dict", "validate_config", "longest_run"]


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
    run of the rate, speedup, Theorem 1 and bound experiments. ``x0 = 0`` starts
    at a saddle of the default problem, so that a reported fraction of visited
    points has an indefinite Hessian.
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

    def to_dict(self) -> dict[str, Any]:
        d = dataclasses.asdict(self)
        d["problem"] = label_of(self.problem)
        d["topologies"] = [label_of(t) for t in self.topologies]
        return d


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

    The error names the key and the closest valid name.
    """
    for key in over:
        if key not in _FIELDS:
            raise unknown_key("config keys (SuiteConfig fields)", key, sorted(_FIELDS), source)
    over = {k: tuple(v) if isinstance(v, list) else v for k, v in over.items()}
    return dataclasses.replace(base, **over)


def validate_config(cfg: SuiteConfig) -> SuiteConfig:
    """Check a configuration before running anything (errors name the setting and value)."""
    check_int("nodes", cfg.n, min_value=2)
    check_int("dim", cfg.d, min_value=1)
    check_int("tau", cfg.tau, min_value=0)
    if cfg.delay not in ("fixed", "random"):
        raise ValueError(f"delay must be one of fixed, random, got {cfg.delay!r}")
    check_int("replicas", cfg.replicas, min_value=3)
    check_int("rate_replicas", cfg.rate_replicas, min_value=3)
    check_int("speedup_replicas", cfg.speedup_replicas, min_value=3)
    check_int("delay_replicas", cfg.delay_replicas, min_value=3)
    for name in ("topology_replicas", "scaling_replicas", "complexity_replicas"):
        check_int(name, getattr(cfg, name), min_value=3)
    for name in (
        "Ks",
        "speedup_ns",
        "speedup_Ks",
        "delay_Ks",
        "baseline_Ks",
        "topology_Ks",
        "scaling_Ks",
        "complexity_ns",
        "complexity_budgets",
    ):
        v = getattr(cfg, name)
        if len(v) < 2 or any(not isinstance(x, int) or x < 1 for x in v) or list(v) != sorted(set(v)):
            raise ValueError(f"{name} must be at least 2 increasing positive integers, got {list(v)}")
    t = cfg.taus
    if not t or any(not isinstance(x, int) or x < 0 for x in t) or list(t) != sorted(set(t)) or t[0] != 0 or len(t) < 2:
        raise ValueError(
            f"taus must be increasing integers >= 0 starting with 0 (the undelayed reference) and "
            f"at least one delay, got {list(t)}"
        )
    small = [(n, T) for n in cfg.complexity_ns for T in cfg.complexity_budgets if T // n < 2]
    if small:
        raise ValueError(
            f"complexity_budgets must give every n of complexity_ns at least 2 iterations (T // n >= 2), "
            f"got T = {small[0][1]} for n = {small[0][0]}"
        )
    sf = cfg.scaling_factor
    if isinstance(sf, bool) or not isinstance(sf, (int, float)) or not math.isfinite(sf) or sf <= 0 or sf == 1:
        raise ValueError(f"scaling_factor must be a finite number > 0 other than 1, got {sf!r}")
    for tname in cfg.compare_topologies:
        resolve_topology(tname, cfg)(cfg.n, 0)
    if not cfg.topologies:
        raise ValueError("topologies must name at least one schedule, got none")
    for t in cfg.topologies:
        resolve_topology(t, cfg)(cfg.n, 0)
    make = resolve_problem(cfg.problem, cfg)
    make(cfg.n, 0)
    return cfg
