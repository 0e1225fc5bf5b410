"""What is verified: the problem and schedules of a configuration, resolved to factories.

Names, ``MODULE:ATTR`` strings and callables become factories ``f(n, seed)``;
a user's problem is checked against the Problem protocol; the user's code is
fingerprinted for the cache key and listed for upload to cluster workers.
"""

from __future__ import annotations

import importlib
import math
import os
import sys
from typing import TYPE_CHECKING, Any

import numpy as np

from .. import graphs, mixing, problems

if TYPE_CHECKING:
    from collections.abc import Callable
    from typing import Protocol, TypeAlias

    from ..problems import ProblemProtocol
    from .departures import Variant

    #: A schedule of a setting: ``f(n, seed) -> Topology``.
    TopologyFactory: TypeAlias = Callable[[int, int], graphs.Topology]
    #: A problem of a setting: ``f(n, seed) -> Problem``.
    ProblemFactory: TypeAlias = Callable[[int, int], ProblemProtocol]

    class _Setting(Protocol):
        """What this module reads of a configuration: fields of a :class:`~sgpverify.suite.SuiteConfig`
        (not imported here: the configuration's module imports this one)."""

        @property
        def n(self) -> int: ...
        @property
        def d(self) -> int: ...
        @property
        def problem(self) -> object: ...
        @property
        def alpha(self) -> float: ...
        @property
        def heterogeneity(self) -> float: ...
        @property
        def sigma(self) -> float: ...
        @property
        def topologies(self) -> tuple: ...
        @property
        def peers(self) -> int: ...
        @property
        def edge_prob(self) -> float | None: ...
        @property
        def rows(self) -> int | None: ...
        @property
        def mixing_horizon(self) -> int: ...


__all__ = [
    "SUITE_TOPOLOGIES",
    "label_of",
    "resolve_topology",
    "resolve_problem",
    "load_attr",
    "check_user_problem",
    "setting_schedules",
    "control_schedules",
    "is_doubly_stochastic",
    "realisation_seed",
    "realisations",
    "is_random",
    "setting_code",
    "upload_files",
]


def label_of(obj: object) -> str:
    """A setting's name for reports and cache keys: the string itself, or a callable's qualified name."""
    if isinstance(obj, str):
        return obj
    return getattr(obj, "__qualname__", None) or getattr(obj, "name", None) or type(obj).__name__


#: The schedules a setting can name: every registered family (:data:`sgpverify.graphs.FAMILIES`).
SUITE_TOPOLOGIES = graphs.TOPOLOGY_NAMES


def resolve_topology(spec: str | TopologyFactory, cfg: _Setting) -> TopologyFactory:
    """A factory ``f(n, seed) -> Topology`` from a name or a callable."""
    if callable(spec):
        return spec
    if spec not in graphs.TOPOLOGY_NAMES:
        raise ValueError(f"topology must be one of {', '.join(SUITE_TOPOLOGIES)}, got {spec!r}")
    # the setting's peers and rows go to the families that take them (the registry says which)
    takes_peers, takes_rows = graphs.takes(spec, "peers"), graphs.takes(spec, "rows")

    def make(n, seed):
        peers = cfg.peers if takes_peers else 1
        rows = cfg.rows if takes_rows and cfg.rows and n % cfg.rows == 0 else None
        return graphs.by_name(spec, n, peers=peers, seed=seed, p=cfg.edge_prob, rows=rows)

    make.__qualname__ = spec
    return make


def load_attr(spec: str) -> Callable[..., Any]:
    mod_name, _, attr = spec.partition(":")
    if not mod_name or not attr:
        raise ValueError(f"problem must be a built-in name or MODULE:ATTR, got {spec!r}")
    if os.getcwd() not in sys.path and "" not in sys.path:
        sys.path.insert(0, os.getcwd())
    try:
        mod = importlib.import_module(mod_name)
    except ImportError as exc:
        raise ValueError(f"problem module {mod_name!r} could not be imported ({exc}), got problem = {spec!r}") from None
    if not hasattr(mod, attr):
        raise ValueError(f"problem module {mod_name!r} has no attribute {attr!r}, got problem = {spec!r}")
    obj = getattr(mod, attr)
    if not callable(obj):
        raise ValueError(
            f"problem {spec!r} must name a callable ATTR(n=..., d=..., seed=...), got a {type(obj).__name__}"
        )
    return obj


def resolve_problem(spec: object, cfg: _Setting) -> ProblemFactory:
    """A factory ``f(n, seed) -> Problem`` from a name, ``MODULE:ATTR`` or a callable."""
    if isinstance(spec, str) and ":" not in spec:
        if spec not in problems.PROBLEM_NAMES:
            raise ValueError(f"problem must be one of {', '.join(problems.PROBLEM_NAMES)} or MODULE:ATTR, got {spec!r}")
        if spec == "quadratic-cosine":
            kw = dict(alpha=cfg.alpha, heterogeneity=cfg.heterogeneity, sigma=cfg.sigma)
        else:
            kw = {}

        def make(n, seed):
            return problems.by_name(spec, n, cfg.d, seed=seed, **kw)

        make.__qualname__ = spec
        return make
    factory = load_attr(spec) if isinstance(spec, str) else spec
    if not callable(factory):
        raise ValueError(f"problem must be a name, MODULE:ATTR or a callable, got {type(spec).__name__}")

    def make(n, seed):
        try:
            prob = factory(n=n, d=cfg.d, seed=seed)
        except TypeError as exc:
            raise ValueError(f"problem factory {label_of(spec)} must accept (n=..., d=..., seed=...): {exc}") from None
        return check_user_problem(prob, n, cfg.d, label_of(spec))

    make.__qualname__ = label_of(spec)
    return make


def check_user_problem(prob: Any, n: int, d: int, label: str) -> ProblemProtocol:
    """The Problem protocol, with finite positive constants and the right sizes."""
    for attr in ("n_nodes", "dim", "L", "sigma2", "zeta2", "f_lower", "grad", "full_grad", "value"):
        if not hasattr(prob, attr):
            raise ValueError(f"problem {label} must follow the Problem protocol: missing attribute {attr!r}")
    for attr in ("L", "sigma2", "zeta2"):
        v = getattr(prob, attr)
        ok = isinstance(v, (int, float, np.floating, np.integer)) and math.isfinite(float(v))
        if not ok or float(v) < 0 or (attr == "L" and float(v) <= 0):
            need = "a finite positive number" if attr == "L" else "a finite number >= 0"
            raise ValueError(f"problem {label}: {attr} must be {need}, got {v!r}")
    fl = prob.f_lower
    if not isinstance(fl, (int, float, np.floating, np.integer)) or not math.isfinite(float(fl)):
        raise ValueError(f"problem {label}: f_lower must be a finite number, got {fl!r}")
    if prob.n_nodes != n or prob.dim != d:
        raise ValueError(
            f"problem {label} must have n_nodes = {n} and dim = {d} when called with n={n}, d={d}, "
            f"got n_nodes = {prob.n_nodes}, dim = {prob.dim}"
        )
    return problems.check_problem(prob)


def setting_schedules(cfg: _Setting) -> list[tuple[str, TopologyFactory]]:
    """(label, topology factory) of every schedule of the setting."""
    return [(label_of(t), resolve_topology(t, cfg)) for t in cfg.topologies]


def control_schedules(cfg: _Setting, variant: Variant) -> list[tuple[str, TopologyFactory]]:
    """Which schedules a control variant runs on: for de-biasing departures the
    first schedule whose weights move (where the departure matters)."""
    sch = setting_schedules(cfg)
    if variant.debias:
        return sch[:1]
    for label, make in sch:
        if not is_doubly_stochastic(make(cfg.n, 0), cfg.mixing_horizon):
            return [(label, make)]
    return sch[:1]


def is_doubly_stochastic(topo: graphs.Topology, horizon: int) -> bool:
    """Whether the push matrices (column-stochastic) also have unit row sums over the horizon."""
    K = min(horizon, topo.period or horizon)
    return all(np.allclose(mixing.push_matrix(topo, k).sum(axis=1), 1.0, rtol=0, atol=1e-12) for k in range(K))


def realisation_seed(seed: int, r: int) -> int:
    """The seed of replica ``r``'s own realisation of a random schedule, and of its noise
    (:func:`realisations`): ``seed`` itself for ``r = 0`` (the realisation that the mixing experiment
    measures), else a 32-bit seed drawn from ``(seed, r)``."""
    if r == 0:
        return int(seed)
    return int(np.random.SeedSequence([int(seed), REALISATION_KEY, int(r)]).generate_state(1)[0])


#: The key that separates the realisations' seeds from every other use of ``(seed, r)``.
REALISATION_KEY = 0x5E9A11


def realisations(make: TopologyFactory, n: int, seed: int, replicas: int) -> list[graphs.Topology] | None:
    """One realisation of the schedule ``make`` per replica (seeds :func:`realisation_seed`) where the
    schedule is random, else None. A schedule is random where it has no period and its edges over the
    first 16 steps change with the seed (a deterministic aperiodic schedule does not).

    The replicas of one :func:`~sgpverify.engine.simulate` call share one graph sequence: their spread
    measures the noise, not the schedule, and a realisation's own fluctuation is common to them all.
    A claim about a random schedule is about its family, so its replicas run on their own realisations
    (docs/theory.md, "Each replica its own realisation of a random schedule")."""
    first = _two_realisations(make, n, seed)
    if first is None:
        return None
    return list(first)[:replicas] + [make(n, realisation_seed(seed, r)) for r in range(2, replicas)]


def is_random(make: TopologyFactory, n: int, seed: int = 0) -> bool:
    """Whether the schedule ``make`` is random: no period, and its edges over the first 16 steps
    change with the seed (those of a deterministic aperiodic schedule do not)."""
    return _two_realisations(make, n, seed) is not None


def _two_realisations(make, n, seed):
    """Realisations 0 and 1 of ``make`` where the schedule is random (:func:`is_random`), else None."""
    topo = make(n, seed)
    if topo.period is not None:
        return None
    other = make(n, realisation_seed(seed, 1))
    if all(np.array_equal(topo.edges(k), other.edges(k)) for k in range(16)):
        return None
    return topo, other


def setting_code(cfg: _Setting) -> dict[str, str] | None:
    """Fingerprints of the user's code in the setting (problem, schedules), for the cache key;
    None if some of it is not pinned by a file (a lambda, a local function): not cached."""
    from ..sweep import code_fingerprint

    out = {}
    specs = [("problem", cfg.problem)] + [(f"topologies[{i}]", t) for i, t in enumerate(cfg.topologies)]
    for what, spec in specs:
        if isinstance(spec, str) and ":" not in spec:
            continue  # built in: covered by sgpverify's own source
        fp = code_fingerprint(load_attr(spec) if isinstance(spec, str) else spec)
        if fp is None:
            return None
        out[what] = fp
    return out


def upload_files(cfg: _Setting) -> list[str]:
    """The file of a MODULE:ATTR problem, for dask workers that cannot import it from here."""
    if isinstance(cfg.problem, str) and ":" in cfg.problem:
        mod = sys.modules.get(cfg.problem.partition(":")[0])
        f = getattr(mod, "__file__", None)
        if f and os.path.basename(f) != "__init__.py":
            return [f]
    return []
