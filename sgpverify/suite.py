"""The verification suite behind ``sgpverify verify``.

Each check is one small record, a :class:`Claim`: the paper's statement, the
experiment that measures it, the statistic and the criterion (fixed before any
run, see :data:`CRITERIA`), and the negative control -- the smallest realistic
departure from the theory's assumptions on which the check must fail. The suite
only runs experiments and collects verdicts: ``pass``, ``fail`` or
``inconclusive``. With ``controls=True`` every check is also run on its
control, and the report says whether the control was ``detected`` (the check
failed on it).

Experiments are plain functions of a frozen :class:`SuiteConfig`, a seed and a
:class:`Variant` (the departure of a control, or none); their raw results are
JSON-ready dicts. What is verified -- problem, schedules, delays -- comes from
the configuration, so :func:`verify` answers the question for the user's own
schedule and problem.
"""

from __future__ import annotations

import dataclasses
import importlib
import inspect
import math
import os
import sys
import time
import warnings

import numpy as np
from scipy import stats

from . import __version__, graphs, mixing, problems, rates, theory
from ._validate import unknown_key
from .assumptions import check_mixing
from .engine import simulate
from .errors import EffectiveStepWarning, SimulationDivergedError
from .problems import replica_grads

__all__ = [
    "SuiteConfig",
    "Check",
    "SuiteResult",
    "Claim",
    "Control",
    "Variant",
    "QUICK",
    "FULL",
    "PRESETS",
    "run_suite",
    "verify",
    "CRITERIA",
    "CHECK_NAMES",
    "CLAIMS",
    "RATE_DELTA",
    "RATE_OMEGA",
    "exit_status",
    "irregular_exponential",
    "resolve_problem",
    "resolve_topology",
]

EPS = np.finfo(float).eps

#: Half-width of the band around a predicted exponent that counts as agreement.
#: Fixed before any run: half of the smallest departure (0.1) the exponent test
#: must detect, and 25-50 times the O(1/K) remainder left after the K^-1/2
#: correction at the preset's smallest K (docs/theory.md, "Testing an exponent").
RATE_DELTA = 0.05
#: Exponent of the correction term of every rate: the derived bound's
#: higher-order terms are O(gamma) = O(K^-1/2) relative to the leading one.
RATE_OMEGA = 0.5
#: Correction terms of a ratio of two runs that share the leading term (delays, baselines): the
#: bound's expansion in gamma ~ K^-1/2 has O(gamma) and O(gamma^2) relative terms, and the O(gamma)
#: part can cancel (it does when the nodes' Hessians agree), so both are fitted (docs/theory.md).
RATIO_OMEGAS = (0.5, 1.0)


# ---------------------------------------------------------------- configuration


@dataclasses.dataclass(frozen=True)
class SuiteConfig:
    """Everything the suite runs: the setting (problem, schedules, delays) and the sizes.

    ``problem`` is a built-in name, ``"MODULE:ATTR"`` (a callable
    ``ATTR(n=..., d=..., seed=...)`` returning a Problem-protocol object) or a
    callable of that form; ``problem_options`` are passed to built-ins.
    ``topologies`` are schedule names (:data:`sgpverify.graphs.TOPOLOGY_NAMES`
    or ``"exponential-irregular"``) or callables ``f(n, seed) -> Topology``; the
    default pairs the paper's exponential graph (doubly stochastic: weights
    stay 1) with :func:`irregular_exponential` (unequal in-degrees: push-sum
    weights move, in about [0.45, 1.65]). ``tau``/``delay`` apply to every SGP
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

    def to_dict(self):
        d = dataclasses.asdict(self)
        d["problem"] = _label(self.problem)
        d["topologies"] = [_label(t) for t in self.topologies]
        return d


def _label(obj):
    if isinstance(obj, str):
        return obj
    return getattr(obj, "__qualname__", None) or getattr(obj, "name", None) or type(obj).__name__


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


def config_from_dict(over, base=QUICK, source=None):
    """A :class:`SuiteConfig` from ``base`` with overrides; unknown keys are rejected.

    The error names the key and the closest valid name.
    """
    for key in over:
        if key not in _FIELDS:
            raise unknown_key("config keys (SuiteConfig fields)", key, sorted(_FIELDS), source)
    over = {k: tuple(v) if isinstance(v, list) else v for k, v in over.items()}
    return dataclasses.replace(base, **over)


# ---------------------------------------------------------------- setting: problem and schedules


def irregular_exponential(n, seed=None):
    """The exponential graph with unequal in-degrees: push-sum weights move.

    Step k: every node i sends to ``i + 2^(k mod m)`` (the paper's schedule,
    THEORY.md section 4) and every third node (``i % 3 == 0``) also sends to
    ``i - 1``. In-degrees are then unequal, the matrices only column-stochastic,
    and the push-sum weights move (measured: within [0.45, 1.65] for n = 4..64)
    while staying away from zero, so de-biasing ``z = x / w`` matters.

    Examples
    --------
    >>> t = irregular_exponential(6)
    >>> t.period, t.edges(0)[:4].tolist()
    (3, [[0, 1], [0, 5], [1, 2], [2, 3]])
    """
    base = graphs.exponential(n)
    i = np.arange(n)
    extra = i[i % 3 == 0]
    steps = []
    for k in range(base.period):
        e = base.edges(k)
        if n > 1:
            e = np.concatenate([e, np.stack([extra, (extra - 1) % n], axis=1)])
        steps.append(e)
    return graphs.PeriodicTopology(n, steps, name=f"exponential-irregular(n={n})")


SUITE_TOPOLOGIES = graphs.TOPOLOGY_NAMES + ("exponential-irregular",)


def resolve_topology(spec, cfg):
    """A factory ``f(n, seed) -> Topology`` from a name or a callable."""
    if callable(spec):
        return spec
    if spec == "exponential-irregular":
        return irregular_exponential
    if spec not in graphs.TOPOLOGY_NAMES:
        raise ValueError(f"topology must be one of {', '.join(SUITE_TOPOLOGIES)}, got {spec!r}")

    def make(n, seed):
        peers = cfg.peers if spec in ("exponential", "exponential-irregular", "exponential-bidir") else 1
        rows = cfg.rows if spec == "torus" and cfg.rows and n % cfg.rows == 0 else None
        return graphs.by_name(spec, n, peers=peers, seed=seed, p=cfg.edge_prob, rows=rows)

    make.__qualname__ = spec
    return make


def _load_attr(spec):
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


def resolve_problem(spec, cfg):
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
    factory = _load_attr(spec) if isinstance(spec, str) else spec
    if not callable(factory):
        raise ValueError(f"problem must be a name, MODULE:ATTR or a callable, got {type(spec).__name__}")

    def make(n, seed):
        try:
            prob = factory(n=n, d=cfg.d, seed=seed)
        except TypeError as exc:
            raise ValueError(f"problem factory {_label(spec)} must accept (n=..., d=..., seed=...): {exc}") from None
        return check_user_problem(prob, n, cfg.d, _label(spec))

    make.__qualname__ = _label(spec)
    return make


def check_user_problem(prob, n, d, label):
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


# ---------------------------------------------------------------- variants (departures of controls)


@dataclasses.dataclass(frozen=True)
class Variant:
    """A departure from the theory's assumptions (the identity by default).

    step : "sqrt" (gamma = sqrt(n/K), the claim) or "constant" (gamma =
    sqrt(n/K_min) at every K); extra_noise : added independent gradient noise,
    in multiples of the declared sigma^2 (99: the true variance is 100 sigma^2);
    shared_noise : add noise of the declared variance common to all nodes (every
    worker seeded alike), which no averaging removes; bias : a constant gradient
    bias of norm ``bias * sqrt(sigma^2)`` (or ``bias`` when sigma^2 = 0); debias :
    False runs push-sum without de-biasing (z = x); loss : probability that a
    message is lost in flight (mass is not conserved); disconnect : the mixing
    check runs on a schedule in which node 0 never receives.
    """

    name: str = "none"
    step: str = "sqrt"
    extra_noise: float = 0.0
    shared_noise: bool = False
    bias: float = 0.0
    debias: bool = True
    loss: float = 0.0
    disconnect: bool = False


NONE = Variant()


def _per_replica(grad, Z, rngs, out):
    """``out[r] = grad(Z[r], rngs[r])`` for every replica: a wrapper's ``grad_replicas``
    when its inner problem has none."""
    for r, rng in enumerate(rngs):
        out[r] = grad(Z[r], rng)
    return out


class _Perturbed:
    """A problem whose stochastic gradients depart from the declared model."""

    def __init__(self, inner, v):
        self._inner = inner
        self._v = v
        s2 = float(inner.sigma2)
        self._scale = math.sqrt(s2 / inner.dim) if s2 > 0 else 1.0 / math.sqrt(inner.dim)
        if v.bias:
            self._b = np.full(inner.dim, v.bias * (math.sqrt(s2) if s2 > 0 else 1.0) / math.sqrt(inner.dim))

    def __getattr__(self, name):
        return getattr(self._inner, name)

    def grad(self, z, rng):
        g = np.array(self._inner.grad(z, rng), dtype=float)
        v = self._v
        if v.extra_noise:
            g += rng.standard_normal(g.shape) * (self._scale * math.sqrt(v.extra_noise))
        if v.shared_noise:
            g += rng.standard_normal(g.shape[:-2] + (1, g.shape[-1])) * self._scale
        if v.bias:
            g += self._b
        return g

    def grad_replicas(self, Z, rngs, out):
        """``grad(Z[r], rngs[r])`` for every replica r, into ``out`` (R, n, d): the inner
        problem's ``grad_replicas`` when it has one, then each replica's departures drawn
        from its own stream in ``grad``'s order (the same bits and draws); else one
        ``grad`` call per replica."""
        inner = replica_grads(self._inner)
        if inner is None:
            return _per_replica(self.grad, Z, rngs, out)
        inner(Z, rngs, out)
        v = self._v
        if v.extra_noise:
            c = self._scale * math.sqrt(v.extra_noise)
            for g, rng in zip(out, rngs):
                g += rng.standard_normal(g.shape) * c
        if v.shared_noise:
            for g, rng in zip(out, rngs):
                g += rng.standard_normal((1, g.shape[-1])) * self._scale
        if v.bias:
            out += self._b
        return out


# ---------------------------------------------------------------- records


@dataclasses.dataclass(frozen=True)
class Control:
    """The negative control of a check: a departure on which the check must fail."""

    name: str
    description: str
    variant: Variant
    experiments: tuple  # experiment keys re-run under the variant


@dataclasses.dataclass(frozen=True)
class Claim:
    """One checkable statement: the paper's claim, its experiment, criterion and control."""

    name: str
    statement: str
    experiments: tuple
    statistic: str
    criterion: str
    control: Control
    check: object  # function (cfg, data) -> dict(verdict, measured, predicted, detail, extra)


@dataclasses.dataclass(frozen=True)
class Check:
    """One verdict: ``pass``, ``fail`` or ``inconclusive``, with what was measured."""

    name: str
    verdict: str
    measured: str
    predicted: str
    criterion: str
    detail: str
    code: str
    extra: dict = dataclasses.field(default_factory=dict)
    control: dict | None = None

    @property
    def passed(self):
        return self.verdict == "pass"

    def to_dict(self):
        d = {k: getattr(self, k) for k in ("name", "verdict", "measured", "predicted", "criterion", "detail", "code")}
        d.update(self.extra)
        if self.control is not None:
            d["control"] = self.control
        return d


@dataclasses.dataclass(frozen=True)
class SuiteResult:
    """Checks, raw data of every experiment, configuration, seed and timing."""

    config: SuiteConfig
    seed: int
    checks: tuple
    data: dict
    seconds: float
    controls: bool = False

    @property
    def passed(self):
        return all(c.passed for c in self.checks) and self.controls_detected

    @property
    def controls_detected(self):
        return all(c.control is None or c.control["detected"] for c in self.checks)

    @property
    def status(self):
        """Exit status of ``sgpverify verify``: see :func:`exit_status`."""
        return exit_status(self)

    def to_dict(self):
        return {
            "status": {0: "pass", 1: "fail", 4: "inconclusive"}[self.status],
            "checks": [c.to_dict() for c in self.checks],
            "config": self.config.to_dict(),
            "seed": self.seed,
            "seconds": self.seconds,
            "controls": self.controls,
            "version": __version__,
        }


def exit_status(result):
    """0 every check passes (and every control run is detected); 1 some check fails
    or some control is not detected; 4 none fails but some are inconclusive."""
    if any(c.verdict == "fail" for c in result.checks) or not result.controls_detected:
        return 1
    if any(c.verdict == "inconclusive" for c in result.checks):
        return 4
    return 0


# ---------------------------------------------------------------- running one configuration


def _gamma(cfg, n, K, variant):
    if variant.step == "constant":
        return math.sqrt(n / min(cfg.Ks))
    return math.sqrt(n / K)


def _wrap_topology(topo, variant, seed):
    if variant.loss:
        if not hasattr(graphs, "with_message_loss"):  # pragma: no cover - older graphs module
            raise RuntimeError("message-loss control needs graphs.with_message_loss")
        return graphs.with_message_loss(topo, variant.loss, seed=seed)
    return topo


def _run(cfg, prob, topo, K, seed, variant=NONE, *, replicas=None, tau=None, delay=None, algorithm="sgp", states=False):
    """One simulation at iteration budget K; returns a JSON-ready summary."""
    n = prob.n_nodes
    gamma = _gamma(cfg, n, K, variant)
    if variant.extra_noise or variant.shared_noise or variant.bias:
        prob = _Perturbed(prob, variant)
    tau = cfg.tau if tau is None else tau
    delay = cfg.delay if delay is None else delay
    if algorithm == "sgp":
        topo = _wrap_topology(topo, variant, seed)
    kw = dict(tau=tau, delay=delay) if algorithm == "sgp" else {}
    if algorithm == "sgp" and not variant.debias:
        kw["debias"] = False
    R = cfg.replicas if replicas is None else replicas
    if states:  # keep at most about 2e6 numbers of states (every s-th iterate) for the Hessian fraction
        states = max(1, int(math.ceil((K + 1) * R * n * prob.dim / 2e6)))
    with warnings.catch_warnings(record=True) as caught:
        # the effective-step warning is a finding: kept in the run's record, not printed per run
        warnings.simplefilter("always", EffectiveStepWarning)
        tr = simulate(
            prob,
            topo,
            step_size=gamma,
            n_iter=K,
            x0=np.full(prob.dim, cfg.x0),
            replicas=R,
            seed=seed,
            record_every=1,
            algorithm=algorithm,
            record_states=states,
            **kw,
        )
    for w in caught:
        if not issubclass(w.category, EffectiveStepWarning):
            warnings.warn_explicit(w.message, w.category, w.filename, w.lineno)
    gns = np.asarray(tr.grad_norm_sq, float).reshape(K + 1, R).T  # (R, K+1)
    if not (np.all(np.isfinite(tr.grad_norm_sq)) and np.all(np.isfinite(tr.consensus))):
        raise SimulationDivergedError(
            f"simulation diverged: the measurements overflowed in the run at K = {K} (step_size = {gamma:.4g}; "
            f"problem L = {float(prob.L):.4g}, so step_size <= 1/L = {1 / float(prob.L):.4g} is the safe range)"
        )
    cons = np.asarray(tr.consensus, float).reshape(K + 1, R).T
    val = np.asarray(tr.value, float).reshape(K + 1, R).T
    step_sq = np.asarray(tr.step_sq, float).reshape(K, R).T if tr.step_sq is not None else None
    every = max(1, K // 256)
    wmin = float(np.min(tr.weight_min))
    wk = np.asarray(tr.weight_min, float).reshape(K + 1, R).T  # (R, K+1) weight floor of each step
    out = {
        "K": K,
        "n": n,
        "gamma": gamma,
        "tau": tau,
        "algorithm": algorithm,
        "stationarity": gns[:, :K].mean(axis=1).tolist(),  # (1/K) sum_{k<K} ||grad f(xbar^k)||^2 per replica
        "consensus": cons[:, :K].mean(axis=1).tolist(),  # (1/K) sum_{k<K} Xi^k per replica
        "consensus_max": float(cons[:, :K].mean(axis=0).max()),  # max_k of the replica mean of Xi^k
        # max_k of E[Xi^k] (min_i w_i^k)^2: the de-biasing step of (b2) with the weight floor of step k
        "consensus_w2_max": float((cons[:, :K] * wk[:, :K] ** 2).mean(axis=0).max()) if K else 0.0,
        "f0": val[:, 0].tolist(),
        "fK": val[:, K].tolist(),
        "mass_error": float(np.nanmax(tr.mass_error)),
        "weight_error": float(np.max(tr.weight_error)),
        "mass_tol": 64 * EPS * K * n * (1.0 + float(np.abs(tr.z).max())),
        "weight_tol": 64 * EPS * K * n,
        "weight_min": wmin,
        "weight_max": float(np.max(tr.weight_max)),
        "effective_step": gamma / wmin if wmin > 0 else math.inf,
        "effective_step_warning": next(
            (str(w.message) for w in caught if issubclass(w.category, EffectiveStepWarning)), None
        ),
        "mass_lost": float(np.nanmax(tr.mass_lost)) if getattr(tr, "mass_lost", None) is not None else 0.0,
        "G2sq": float(step_sq.mean(axis=0).max()) if step_sq is not None and K else None,
        "grad_norm_sq_curve": gns.mean(axis=0)[::every].tolist(),
        "consensus_curve": cons.mean(axis=0)[::every].tolist(),
        "curve_every": every,
    }
    if states and hasattr(prob, "min_hessian_eigenvalue") and tr.z_history is not None:
        zh = np.asarray(tr.z_history)[: (K - 1) // states + 1]  # iterates k < K (every states-th)
        out["indefinite_fraction"] = float(np.mean(np.asarray(prob.min_hessian_eigenvalue(zh)) < 0))
    return out


def _schedules(cfg):
    """(label, topology factory) of every schedule of the setting."""
    return [(_label(t) if not callable(t) else _label(t), resolve_topology(t, cfg)) for t in cfg.topologies]


def _pick(cfg, variant):
    """Which schedules a control variant runs on: for de-biasing departures the
    first schedule whose weights move (where the departure matters)."""
    sch = _schedules(cfg)
    if variant.debias:
        return sch[:1]
    for label, make in sch:
        if not _doubly_stochastic(make(cfg.n, 0), cfg.mixing_horizon):
            return [(label, make)]
    return sch[:1]


def _doubly_stochastic(topo, horizon):
    """Whether the push matrices (column-stochastic) also have unit row sums over the horizon."""
    K = min(horizon, topo.period or horizon)
    return all(np.allclose(mixing.push_matrix(topo, k).sum(axis=1), 1.0, rtol=0, atol=1e-12) for k in range(K))


# ---------------------------------------------------------------- experiments


def exp_rates(cfg, seed, variant=NONE, progress=None, schedules=None):
    """Stationarity and consensus averages against K, gamma = sqrt(n/K), on every schedule."""
    make_prob = resolve_problem(cfg.problem, cfg)
    prob = make_prob(cfg.n, seed)
    out = {}
    for label, make in schedules or _schedules(cfg):
        topo = make(cfg.n, seed)
        runs = []
        for K in cfg.Ks:
            runs.append(_run(cfg, prob, topo, K, seed, variant, replicas=cfg.rate_replicas, states=variant == NONE))
            if progress:
                progress(f"rates {label} K={K}")
        out[label] = {"topology": topo.name, "runs": runs}
    return {"n": cfg.n, "problem": repr(prob), "constants": _constants(prob), "schedules": out}


def _constants(prob):
    c = {k: float(getattr(prob, k)) for k in ("L", "sigma2", "zeta2", "f_lower")}
    fs = getattr(prob, "f_star", None)
    c["f_star"] = None if fs is None else float(fs)
    return c


def exp_speedup(cfg, seed, variant=NONE, progress=None, schedules=None):
    """Stationarity average against n at each K of ``speedup_Ks`` (gamma = sqrt(n/K))."""
    make_prob = resolve_problem(cfg.problem, cfg)
    out = {}
    for label, make in schedules or _schedules(cfg):
        runs = []
        for n in cfg.speedup_ns:
            prob = make_prob(n, seed)
            topo = make(n, seed)
            for K in cfg.speedup_Ks:
                runs.append(_run(cfg, prob, topo, K, seed, variant, replicas=cfg.speedup_replicas))
                if progress:
                    progress(f"speedup {label} n={n} K={K}")
        out[label] = {"runs": runs}
    return {"Ks": list(cfg.speedup_Ks), "ns": list(cfg.speedup_ns), "schedules": out}


def exp_descent(cfg, seed, variant=NONE, progress=None):
    """The descent inequality (a), run by run: the setting's first schedule, and
    random-peer with random delays (the column-stochastic, delayed case)."""
    prob = resolve_problem(cfg.problem, cfg)(cfg.n, seed)
    label0, make0 = _schedules(cfg)[0]
    out = []
    for label, topo, tau, delay in (
        (label0, make0(cfg.n, seed), cfg.tau, cfg.delay),
        (f"random-peer, tau={cfg.descent_tau} random", graphs.random_peer(cfg.n, seed=seed), cfg.descent_tau, "random"),
    ):
        for K in cfg.descent_Ks:
            r = _run(cfg, prob, topo, K, seed, variant, tau=tau, delay=delay)
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
    return {"runs": out, "constants": _constants(prob)}


def _delay_Ks(cfg):
    """K ladder of the delay experiment: the ratio check's ``delay_Ks`` and the exponent's ``Ks``."""
    return tuple(sorted(set(cfg.delay_Ks) | set(cfg.Ks)))


def exp_delays(cfg, seed, variant=NONE, progress=None):
    """tau-OSGP on the setting's first schedule, random delays: stationarity and consensus
    averages for tau in ``taus`` at every K of ``delay_Ks`` and ``Ks`` (the ratio check reads
    the first, the per-tau exponent the second), and the product constant S2 of each tau for
    the consensus bound (b2)."""
    prob = resolve_problem(cfg.problem, cfg)(cfg.n, seed)
    label, make = _schedules(cfg)[0]
    topo = make(cfg.n, seed)
    runs = []
    for K in _delay_Ks(cfg):
        for tau in cfg.taus:
            if tau == 0 and variant != NONE:
                continue  # a control's departure concerns the delayed runs: the reference comes from the main run
            r = _run(cfg, prob, topo, K, seed, variant, tau=tau, delay="random", replicas=cfg.delay_replicas)
            runs.append(r)
            if progress:
                progress(f"delays K={K} tau={tau}")
    products = {}
    for tau in cfg.taus if variant == NONE else ():  # the schedule's constants: the control's are the same
        pc = product_constants(topo, tau, "random", seed, cfg.bound_horizon)
        products[str(tau)] = {k: pc.get(k) for k in ("S2", "q_tail", "product_note")}
    return {"runs": runs, "schedule": label, "products": products}


def _compared_schedules(cfg):
    """(label, factory) of the topology comparison: the reference (the paper's exponential graph
    with the setting's peers), the same graph with one more peer, and ``compare_topologies``."""
    ref = resolve_topology("exponential", cfg)
    more = dataclasses.replace(cfg, peers=cfg.peers + 1)
    out = [("exponential", ref), (f"exponential, {cfg.peers + 1} peers", resolve_topology("exponential", more))]
    return out + [(_label(t), resolve_topology(t, cfg)) for t in cfg.compare_topologies]


def exp_topologies(cfg, seed, variant=NONE, progress=None):
    """Stationarity and consensus averages on the exponential graph (reference), with one more
    peer, and on ``compare_topologies``, same problem and seeds, at every K of ``topology_Ks``; the
    product constants of each schedule. A control's departure concerns the compared schedules
    only (the reference stays intact)."""
    prob = resolve_problem(cfg.problem, cfg)(cfg.n, seed)
    out = {}
    for i, (label, make) in enumerate(_compared_schedules(cfg)):
        if i == 0 and variant != NONE:
            continue  # the reference of a control comes from the main run (see _control_data)
        topo = make(cfg.n, seed)
        runs = []
        for K in cfg.topology_Ks:
            runs.append(_run(cfg, prob, topo, K, seed, variant, replicas=cfg.topology_replicas))
            if progress:
                progress(f"topologies {label} K={K}")
        out[label] = {"topology": topo.name, "runs": runs}
        if variant == NONE:  # the schedule's constants (a control's departure does not change them)
            rep = check_mixing(topo, tau=cfg.tau, delay=cfg.delay, horizon=cfg.mixing_horizon, seed=seed).to_dict()
            pc = product_constants(topo, cfg.tau, cfg.delay, seed, cfg.bound_horizon)
            out[label].update(
                S2=pc.get("S2"),
                **{k: rep.get(k) for k in ("q_exact", "q_lyapunov", "q_lyapunov_interval", "q", "q_source")},
            )
    return {"reference": "exponential", "more_peers": f"exponential, {cfg.peers + 1} peers", "schedules": out}


class NotApplicable(Exception):
    """An experiment that the setting cannot run (its checks are inconclusive, saying why)."""


class _Scaled:
    """The problem with noise and heterogeneity scaled: ``f_i' = f + s_h (f_i - f)`` and the
    noise times ``s_n``, from the same random draws. So ``zeta^2' = s_h^2 zeta^2``,
    ``sigma^2' = s_n^2 sigma^2``, ``grad f`` (hence ``f*``) unchanged; needs ``local_grad``
    (the exact gradient of every f_i)."""

    def __init__(self, inner, s_h, s_n):
        self._inner, self._sh, self._sn = inner, float(s_h), float(s_n)
        self.sigma2 = float(inner.sigma2) * self._sn**2
        self.zeta2 = float(inner.zeta2) * self._sh**2
        # grad f_i' = s_h grad f_i + (1 - s_h) grad f: Lipschitz with (|s_h| + |1 - s_h|) L
        self.L = float(inner.L) * (abs(self._sh) + abs(1 - self._sh))

    def __getattr__(self, name):
        return getattr(self._inner, name)

    def grad(self, z, rng):
        g = np.asarray(self._inner.grad(z, rng), dtype=float)
        lg = np.asarray(self._inner.local_grad(z), dtype=float)
        fg = np.asarray(self._inner.full_grad(z), dtype=float)
        return fg + self._sh * (lg - fg) + self._sn * (g - lg)

    def grad_replicas(self, Z, rngs, out):
        """``grad(Z[r], rngs[r])`` for every replica r, into ``out`` (R, n, d): the inner
        problem's ``grad_replicas`` when it has one (``local_grad`` and ``full_grad`` still
        per replica, as ``grad`` calls them; the elementwise combination stacked), else one
        ``grad`` call per replica: the same bits and draws."""
        inner = replica_grads(self._inner)
        if inner is None:
            return _per_replica(self.grad, Z, rngs, out)
        g = inner(Z, rngs, out)
        lg = np.stack([np.asarray(self._inner.local_grad(z), dtype=float) for z in Z])
        fg = np.stack([np.asarray(self._inner.full_grad(z), dtype=float) for z in Z])
        np.copyto(out, fg + self._sh * (lg - fg) + self._sn * (g - lg))
        return out


SCALINGS = (("base", 1, 1), ("noise", 1, 2), ("heterogeneity", 2, 1), ("both", 2, 2))


def exp_scaling(cfg, seed, variant=NONE, progress=None):
    """Consensus averages with the gradient noise and the heterogeneity scaled by
    ``scaling_factor`` (separately and together), same draws, at every K of ``scaling_Ks``, on the
    first schedule whose push-sum weights move (so that de-biasing matters)."""
    prob = resolve_problem(cfg.problem, cfg)(cfg.n, seed)
    try:
        prob.local_grad(np.zeros((1, prob.n_nodes, prob.dim)))
    except (NotImplementedError, AttributeError):
        raise NotApplicable(
            f"the problem {prob!r} has no local_grad (the exact gradient of every f_i at "
            "(..., n, d)), which scaling its noise and heterogeneity needs"
        ) from None
    label, make = _pick(cfg, Variant(debias=False))[0]
    topo = make(cfg.n, seed)
    s = cfg.scaling_factor
    out = {}
    for name, sh, sn in SCALINGS:
        p = _Scaled(prob, s if sh == 2 else 1.0, s if sn == 2 else 1.0)
        runs = []
        for K in cfg.scaling_Ks:
            runs.append(_run(cfg, p, topo, K, seed, variant, replicas=cfg.scaling_replicas))
            if progress:
                progress(f"scaling {name} K={K}")
        out[name] = {"runs": runs, "sigma2": p.sigma2, "zeta2": p.zeta2}
    return {"schedule": label, "factor": s, "settings": out}


def exp_complexity(cfg, seed, variant=NONE, progress=None):
    """Stationarity averages for n in ``complexity_ns`` at a ladder of total budgets T = n K
    (``complexity_budgets``), gamma = sqrt(n/K), on the exponential graph."""
    make_prob = resolve_problem(cfg.problem, cfg)
    make_topo = resolve_topology("exponential", cfg)
    runs = []
    for n in cfg.complexity_ns:
        prob = make_prob(n, seed)
        topo = make_topo(n, seed)
        for T in cfg.complexity_budgets:
            r = _run(cfg, prob, topo, T // n, seed, variant, replicas=cfg.complexity_replicas)
            r["budget"] = T
            runs.append(r)
            if progress:
                progress(f"complexity n={n} T={T}")
    return {"ns": list(cfg.complexity_ns), "budgets": list(cfg.complexity_budgets), "runs": runs}


def exp_baselines(cfg, seed, variant=NONE, progress=None, schedules=None):
    """SGP, D-PSGD and AllReduce SGD on the same problem and seeds, at two K."""
    prob = resolve_problem(cfg.problem, cfg)(cfg.n, seed)
    out = {}
    for label, make in schedules or _schedules(cfg):
        topo = make(cfg.n, seed)
        runs = []
        for K in cfg.baseline_Ks:
            for alg in ("sgp", "dpsgd", "allreduce"):
                if alg == "dpsgd" and variant != NONE:
                    continue  # the departures concern push-sum only
                r = _run(
                    cfg,
                    prob,
                    topo,
                    K,
                    seed,
                    variant if alg == "sgp" else NONE,
                    algorithm=alg,
                    tau=0 if alg != "sgp" else None,
                )
                r["algorithm"] = alg
                runs.append(r)
                if progress:
                    progress(f"baselines {label} K={K} {alg}")
        out[label] = {"runs": runs}
    return {"schedules": out}


MIXING_FAMILIES = ("exponential", "exponential-bidir", "ring-bidir", "torus", "hypercube", "random-peer", "erdos-renyi")


def _disconnected(topo):
    """The same schedule with every message to node 0 removed: node 0 never receives."""

    class _NoInto0(graphs.Topology):
        def __init__(self, base):
            self.n, self.period, self.name, self._base = base.n, base.period, f"{base.name} minus edges into 0", base

        def _edges(self, k):
            e = self._base.edges(k)
            return e[e[:, 1] != 0]

    return _NoInto0(topo)


def exp_mixing(cfg, seed, variant=NONE, progress=None):
    """check_mixing on graph families and on every schedule of the setting, plus the
    product constants the bounds need (dense products: suite sizes)."""
    out = []
    fams = () if variant.disconnect else MIXING_FAMILIES
    for name in fams:
        if name == "hypercube" and cfg.n & (cfg.n - 1):
            continue
        topo = graphs.by_name(name, cfg.n, seed=seed)
        out.append(check_mixing(topo, horizon=cfg.mixing_horizon, seed=seed).to_dict())
        if progress:
            progress(f"mixing {name}")
    sched = {}
    for label, make in _schedules(cfg):
        topo = make(cfg.n, seed)
        if variant.disconnect:
            topo = _disconnected(topo)
        rep = check_mixing(topo, tau=cfg.tau, delay=cfg.delay, horizon=cfg.mixing_horizon, seed=seed).to_dict()
        rep.update(product_constants(topo, cfg.tau, cfg.delay, seed, cfg.bound_horizon))
        sched[label] = rep
        if progress:
            progress(f"mixing {label}")
    return {"families": out, "schedules": sched}


# ---------------------------------------------------------------- product constants (dense, suite sizes)


#: Deviations at or below this are round-off (entries of the products are in [0, 1]).
ENVELOPE_FLOOR = 1e3 * EPS


def product_constants(topo, tau, delay, seed, horizon, starts=8, max_rows=1024):
    """Measured constants of the products of the mixing matrices, for the bounds.

    For starts s (one period apart for periodic schedules, spread over the
    horizon otherwise) and every lag t = 1..horizon, with ``P^(s+t-1:s)`` the
    product of t (delay-augmented) matrices and ``w`` the push-sum weights:

    - ``dev_inf[t]``: max over s, i, j of ``|P^(s+t-1:s)_ij - phi_i|`` with
      ``phi = w^(s+t) / n`` (the entrywise deviation of the product lemma);
    - ``dev_2[t]``: max over s of the spectral norm of
      ``M = P^(s+t-1:s)[:n, :n] - w^(s+t)_real 1^T / n`` (docs/theory.md, bound b2);
    - ``S2``: sum of ``dev_2``, plus a geometric tail from the last tenth of the
      horizon (``q_tail``);
    - ``q_exact_dense``: for periodic schedules with deterministic delays, the
      spectral radius of the period product on the disagreement subspace, to
      the power 1/period; None otherwise.

    ``dev_inf`` is reported so that the envelope :func:`sgpverify.check_mixing`
    computes can be held against these dense products (tests/test_suite.py).
    """
    S = mixing.mixing_schedule(topo, tau=tau, delay=delay, seed=seed)
    n, N = S.n, S.N
    if N > max_rows:
        return {"S2": None, "q_exact_dense": None, "product_note": f"rows {N} > {max_rows}: not computed (dense)"}
    per = S.period
    step = per if per else max(1, horizon // starts)
    total = (starts - 1) * step + horizon + 1
    mats = [S.matrix(k).toarray() for k in range(total)]
    w = np.zeros((total + 1, N))
    w[0, :n] = 1.0
    for k in range(total):
        w[k + 1] = mats[k] @ w[k]
    dev_inf = np.zeros(horizon + 1)
    dev_2 = np.zeros(horizon + 1)
    for si in range(starts):
        s = si * step
        Pi = np.eye(N)[:, :n]
        for t in range(1, horizon + 1):
            Pi = mats[s + t - 1] @ Pi
            wk = w[s + t]
            dev_inf[t] = max(dev_inf[t], float(np.max(np.abs(Pi - wk[:, None] / n))))
            M = Pi[:n] - wk[:n, None] / n
            dev_2[t] = max(dev_2[t], float(np.linalg.norm(M, 2)))
    q_exact = None
    if per and (S.model is None or not S.model.random or tau == 0):
        Pp = np.eye(N)
        for k in range(per):
            Pp = mats[k] @ Pp
        ev = np.sort(np.abs(np.linalg.eigvals(Pp)))[::-1]
        q_exact = float(ev[1] ** (1.0 / per)) if N > 1 else 0.0
    # geometric tail rate from the last tenth of the horizon (both series)
    tail = max(2, horizon // 10)

    def rate(dev):
        a, b = dev[horizon - tail], dev[horizon]
        if b <= ENVELOPE_FLOOR:
            return 0.0
        return float(min(1.0, (b / a) ** (1.0 / tail))) if a > 0 else 1.0

    q_tail = rate(dev_2)
    S2 = float(dev_2[1:].sum() + (dev_2[horizon] * q_tail / (1 - q_tail) if q_tail < 1 else math.inf))
    return {
        "S2": S2,
        "q_tail": q_tail,
        "q_exact_dense": q_exact,
        "dev_inf": dev_inf[1:].tolist(),
        "dev_2": dev_2[1:].tolist(),
        "product_starts": starts,
        "product_horizon": horizon,
    }


def exp_theorem(cfg, seed, mixing_data, variant=NONE, progress=None):
    """Theorem 1 where it applies: one run per schedule at the threshold computed from
    the envelope (if the known part of the threshold is within ``theorem_K_cap``)."""
    prob = resolve_problem(cfg.problem, cfg)(cfg.n, seed)
    out = {}
    for label, make in _schedules(cfg):
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
        thr = theory.evaluate(
            theory.PUBLISHED_THRESHOLD_KNOWN_PART, n=cfg.n, L=prob.L, C=max(C, 1e-300), q=min(q, 1 - 1e-15)
        )
        entry["threshold"] = thr
        lL = 4 * math.log10(prob.L)
        entry["threshold_fit"] = (
            10 ** (mx["threshold_fit_log10"] + lL) if mx.get("threshold_fit_log10") is not None else None
        )
        entry["threshold_no_log10"] = (
            mx["threshold_theory_log10"] + lL if mx.get("threshold_theory_log10") is not None else None
        )
        K = int(math.ceil(thr))
        if K <= cfg.theorem_K_cap:
            K = max(K, cfg.Ks[-1])
            entry["run"] = _run(cfg, prob, make(cfg.n, seed), K, seed, variant, replicas=cfg.theorem_replicas)
            if progress:
                progress(f"theorem {label} K={K}")
        out[label] = entry
    return {"schedules": out, "constants": _constants(prob)}


# ---------------------------------------------------------------- checks


def _code(fn):
    try:
        path = inspect.getsourcefile(fn)
        line = inspect.getsourcelines(fn)[1]
        rel = os.path.relpath(path, os.path.dirname(os.path.dirname(__file__)))
        return f"{rel}:{line} ({fn.__name__})"
    except (TypeError, OSError):  # pragma: no cover
        return fn.__name__


def _combine(verdicts):
    if "fail" in verdicts:
        return "fail"
    if "inconclusive" in verdicts or not verdicts:
        return "inconclusive"
    return "pass"


def _mean_se(v):
    v = np.asarray(v, dtype=float)
    return float(v.mean()), float(v.std(ddof=1) / math.sqrt(len(v))) if len(v) > 1 else float("nan")


def _rate_check(cfg, data, key, predicted, xkey="K"):
    parts, verdicts, tests = [], [], {}
    for label, sch in data["rates"]["schedules"].items():
        runs = sch["runs"]
        x = [r["K"] for r in runs]
        Y = np.array([r[key] for r in runs]).T
        t = rates.test_exponent(x, Y, predicted=predicted, delta=RATE_DELTA, omega=RATE_OMEGA)
        tests[label] = t
        verdicts.append(t.verdict)
        w = (min(r["weight_min"] for r in runs), max(r["weight_max"] for r in runs))
        indef = [r.get("indefinite_fraction") for r in runs]
        parts.append(
            f"{label}: {t}; local slopes "
            + ", ".join(f"{s:.3f}" for s in t.local_slopes)
            + f"; weights in [{w[0]:.3g}, {w[1]:.3g}]"
            + (
                "; indefinite-Hessian fraction by K " + ", ".join(f"{v:.2f}" for v in indef)
                if all(v is not None for v in indef)
                else ""
            )
        )
    return _exponent_result(tests, verdicts, parts, predicted)


def _exponent_result(tests, verdicts, parts, predicted):
    """The check's dict from per-schedule exponent tests; the headline numbers are the schedule
    farthest from the prediction."""
    worst = max(tests.values(), key=lambda t: abs(t.exponent - predicted))
    measured = "; ".join(
        f"{lab.split('(')[0]} {t.exponent:.3f} [{t.ci_low:.3f}, {t.ci_high:.3f}]" for lab, t in tests.items()
    )
    return dict(
        verdict=_combine(verdicts),
        measured=measured,
        predicted=f"{predicted:g} +- {RATE_DELTA:g}",
        detail="; ".join(parts),
        extra={
            "exponent": worst.exponent,
            "interval": [worst.ci_low, worst.ci_high],
            "local_slopes": list(worst.local_slopes),
            "per_schedule": {lab: t.to_dict() for lab, t in tests.items()},
        },
    )


def check_stationarity_rate(cfg, data):
    """(1/K) sum_k ||grad f(xbar^k)||^2 ~ K^(-1/2): extrapolated exponent per schedule."""
    return _rate_check(cfg, data, "stationarity", -0.5)


def check_consensus_rate(cfg, data):
    """(1/K) sum_k Xi^k ~ K^(-1): extrapolated exponent per schedule."""
    return _rate_check(cfg, data, "consensus", -1.0)


def check_linear_speedup(cfg, data):
    """Stationarity ~ n^(-1/2) at fixed K, as K -> oo: the slope in n at each K,
    extrapolated in K^(-1/2) to K -> oo (per replica; t interval over replicas)."""
    sp_ = data["speedup"]
    Ks, ns = sp_["Ks"], sp_["ns"]
    parts, verdicts, tests = [], [], {}
    for label, sch in sp_["schedules"].items():
        get = {(r["n"], r["K"]): r for r in sch["runs"]}
        slopes = []  # (R, len(Ks)) slope in n at each K
        for K in Ks:
            Y = np.log(np.array([get[n, K]["stationarity"] for n in ns]).T)  # (R, len(ns))
            u = np.log(np.asarray(ns, float))
            uc = u - u.mean()
            slopes.append((Y - Y.mean(axis=1, keepdims=True)) @ uc / float(uc @ uc))
        Sl = np.array(slopes).T  # (R, m)
        # the slope in n at K is p + b K^(-1/2) + ...: its limit as K -> oo is the speedup exponent
        t = rates.test_limit(np.asarray(Ks, float), Sl, predicted=-0.5, delta=RATE_DELTA, omega=RATE_OMEGA)
        tests[label] = t
        verdicts.append(t.verdict)
        parts.append(
            f"{label}: slope in n (n = {ns[0]}..{ns[-1]}) by K "
            + ", ".join(f"K={K}: {v:.3f}" for K, v in zip(Ks, Sl.mean(axis=0)))
            + f"; {t}"
        )
    return _exponent_result(tests, verdicts, parts, -0.5)


def _delta_of(const, f0):
    fs = const.get("f_star")
    return (
        (f0 - fs, "f(xbar^0) - f*") if fs is not None else (f0 - const["f_lower"], "f(xbar^0) - f_lower (f* unknown)")
    )


def check_theorem1(cfg, data):
    """Theorem 1's bound where the (known part of the) threshold is reached."""
    th = data["theorem"]
    const = th["constants"]
    parts, verdicts, worst = [], [], None
    for label, e in th["schedules"].items():
        thr = e.get("threshold")
        no = e.get("threshold_no_log10")
        no_s = f"; with the Nedic-Olshevsky constants the threshold is 10^{no:.3g}" if no is not None else ""
        if thr is None:
            parts.append(f"{label}: no envelope (C, q) measured: outside what the suite can place{no_s}")
            verdicts.append("inconclusive")
            continue
        if e["run"] is None:
            fit_s = (
                f" (with the fitted pair C = {e['C_fit']:.3g}, q = {e['q_fit']:.3g} it would be "
                f"{e['threshold_fit']:.3g})"
                if e.get("threshold_fit")
                else ""
            )
            parts.append(
                f"{label}: outside the theorem's regime: threshold (known part) {thr:.3g} with the envelope "
                f"C = {e['C']:.3g}, q = {e['q']:.3g} exceeds the largest K run ({cfg.theorem_K_cap})"
                f"{fit_s}{no_s}"
            )
            verdicts.append("outside")
            continue
        r = e["run"]
        f0 = float(np.mean(r["f0"]))
        Delta, how = _delta_of(const, f0)
        bound = theory.evaluate(
            theory.PUBLISHED_BOUND, Delta=Delta, L=const["L"], sigma2=const["sigma2"], n=cfg.n, K=r["K"]
        )
        m, se = _mean_se(r["stationarity"])
        ratio = m / bound
        upper = (
            (m + stats.t.ppf(0.95, len(r["stationarity"]) - 1) * se) / bound if len(r["stationarity"]) > 1 else ratio
        )
        ok = ratio <= 1.0
        verdicts.append("pass" if ok else "fail")
        worst = ratio if worst is None else max(worst, ratio)
        parts.append(
            f"{label}: K = {r['K']} >= threshold (known part) {thr:.3g} from the envelope C = {e['C']:.3g}, "
            f"q = {e['q']:.3g}; measured {m:.4g} vs bound {bound:.4g}, slack factor measured/bound = "
            f"{ratio:.3g} (one-sided 95% upper {upper:.3g}); Delta = {how} = {Delta:.4g}{no_s}"
        )
    in_regime = [v for v in verdicts if v != "outside"]
    if not in_regime:
        verdict = "inconclusive"
        measured = "outside the theorem's regime on every schedule"
    else:
        verdict = _combine(in_regime)
        measured = f"slack {worst:.3g}" if worst is not None else "n/a"
    return dict(
        verdict=verdict,
        measured=measured,
        predicted="<= 1 where K >= threshold",
        detail="; ".join(parts),
        extra={"slack": worst},
    )


def check_descent(cfg, data):
    """Descent inequality (a), run by run: E[LHS - RHS] <= 0 not rejected at 95%."""
    verdicts, parts, worst = [], [], -math.inf
    for r in data["descent"]["runs"]:
        diff = np.asarray(r["lhs"]) - np.asarray(r["rhs"])
        m, se = _mean_se(diff)
        tq = stats.t.ppf(0.95, len(diff) - 1)
        rel = float(np.mean(r["lhs"]) / np.mean(r["rhs"]))
        if r["gamma_L"] > 1:
            verdicts.append("inconclusive")
            note = " (gamma L > 1: outside the inequality's hypothesis)"
        else:
            verdicts.append("pass" if m - tq * se <= 0 else "fail")
            note = ""
        worst = max(worst, rel)
        parts.append(
            f"{r['label']} K={r['K']}: LHS/RHS = {rel:.3g} (gamma L = {r['gamma_L']:.2f}; weights down to "
            f"{r['weight_min']:.2g}, effective step gamma/w_min = {r['effective_step']:.3g} vs 1/L = "
            f"{1 / (r['gamma_L'] / r['gamma']):.3g}){note}"
        )
    return dict(
        verdict=_combine(verdicts),
        measured=f"max LHS/RHS = {worst:.3g}",
        predicted="<= 1",
        detail="; ".join(parts),
        extra={"slack": worst},
    )


def _bound_inputs(cfg, data, label, r):
    mx = data["mixing"]["schedules"][label]
    return mx.get("S2"), r["weight_min"], math.sqrt(r["G2sq"]) if r.get("G2sq") else None


def check_consensus_bound(cfg, data):
    """Consensus bound (b2), run by run: max_k E Xi^k <= (gamma S2 G2 / delta)^2."""
    verdicts, parts, worst = [], [], 0.0
    for label, sch in data["rates"]["schedules"].items():
        for r in sch["runs"]:
            S2, delta, G2 = _bound_inputs(cfg, data, label, r)
            if S2 is None or G2 is None or not math.isfinite(S2) or delta <= 0:
                verdicts.append("inconclusive")
                parts.append(f"{label} K={r['K']}: S2 or delta not measurable")
                continue
            bound = theory.evaluate(theory.CONSENSUS_BOUND_L2, gamma=r["gamma"], S2=S2, G2=G2, delta=delta)
            ratio = r["consensus_max"] / bound
            worst = max(worst, ratio)
            verdicts.append("pass" if ratio <= 1 else "fail")
        parts.append(f"{label}: S2 = {S2:.3g}; worst max_k Xi^k / bound over K = {worst:.3g}")
    return dict(
        verdict=_combine(verdicts),
        measured=f"max ratio {worst:.3g}",
        predicted="<= 1",
        detail="; ".join(parts),
        extra={"slack": worst},
    )


def check_combined_bound(cfg, data):
    """Combined bound (c2), run by run: stationarity average <= descent RHS with Xi bounded by (b2)."""
    const = data["rates"]["constants"]
    verdicts, parts, worst = [], [], 0.0
    for label, sch in data["rates"]["schedules"].items():
        for r in sch["runs"]:
            S2, delta, G2 = _bound_inputs(cfg, data, label, r)
            if S2 is None or G2 is None or not math.isfinite(S2) or delta <= 0 or r["gamma"] * const["L"] > 1:
                verdicts.append("inconclusive")
                continue
            Delta, how = _delta_of(const, float(np.mean(r["f0"])))
            bound = theory.evaluate(
                theory.COMBINED_BOUND_L2,
                Delta=Delta,
                gamma=r["gamma"],
                K=r["K"],
                L=const["L"],
                sigma2=const["sigma2"],
                n=r["n"],
                S2=S2,
                G2=G2,
                delta=delta,
            )
            m, se = _mean_se(r["stationarity"])
            lower = m - stats.t.ppf(0.95, len(r["stationarity"]) - 1) * se
            ratio = m / bound
            worst = max(worst, ratio)
            verdicts.append("pass" if lower <= bound else "fail")
        parts.append(f"{label}: worst stationarity / bound over K = {worst:.3g} (Delta = {how})")
    return dict(
        verdict=_combine(verdicts),
        measured=f"max ratio {worst:.3g}",
        predicted="<= 1",
        detail="; ".join(parts),
        extra={"slack": worst},
    )


def _all_runs(data):
    data = {k: v for k, v in data.items() if not (isinstance(v, dict) and "error" in v)}  # nothing ran there
    out = []
    for key in ("rates", "speedup", "baselines", "topologies"):
        if key in data:
            for sch in data[key]["schedules"].values():
                out += sch["runs"]
    if "scaling" in data:
        for v in data["scaling"]["settings"].values():
            out += v["runs"]
    for key in ("descent", "delays", "complexity"):
        if key in data:
            out += data[key]["runs"]
    if "theorem" in data:
        out += [e["run"] for e in data["theorem"]["schedules"].values() if e.get("run")]
    return out


def check_mass(cfg, data):
    """Mass and weight conservation (mass in flight included) to round-off, in every run."""
    runs = [r for r in _all_runs(data) if r["algorithm"] == "sgp"]
    me = max(r["mass_error"] / r["mass_tol"] for r in runs)
    we = max(r["weight_error"] / r["weight_tol"] for r in runs)
    worst = max(r["mass_error"] for r in runs)
    ok = me <= 1 and we <= 1
    return dict(
        verdict="pass" if ok else "fail",
        measured=f"mass {worst:.2e} (x{me:.2g} of tol), weight x{we:.2g} of tol",
        predicted="0 (round-off)",
        detail=f"{len(runs)} SGP runs; tolerance 64 eps K n scale per run",
        extra={"slack": max(me, we)},
    )


def _log_ratio_limit(get, Ks, num, den):
    """test_limit of log(num/den) of the stationarity averages, paired by replica, as K -> oo."""
    S = np.array(
        [np.log(np.asarray(get[K, num]["stationarity"]) / np.asarray(get[K, den]["stationarity"])) for K in Ks]
    ).T
    return rates.test_limit(np.asarray(Ks, float), S, predicted=0.0, delta=RATE_DELTA, omega=RATIO_OMEGAS)


def check_delays(cfg, data):
    """tau-OSGP: log of the stationarity ratio to tau = 0 tends to 0 as K -> oo (delays enter only
    higher-order terms): paired by replica, extrapolated in K^-1/2."""
    get = {(r["K"], r["tau"]): r for r in data["delays"]["runs"]}
    Ks = list(cfg.delay_Ks)  # the ratio's own ladder (the experiment also runs the exponent's Ks)
    verdicts, parts, short, tests = [], [], [], {}
    for tau in [t for t in cfg.taus if t]:
        t = _log_ratio_limit(get, Ks, tau, 0)
        tests[tau] = t
        verdicts.append(t.verdict)
        ratios = [float(np.mean(get[K, tau]["stationarity"]) / np.mean(get[K, 0]["stationarity"])) for K in Ks]
        c2 = np.mean(get[Ks[-1], tau]["consensus"]) / np.mean(get[Ks[-1], 0]["consensus"])
        parts.append(
            f"tau={tau}: stationarity ratio by K "
            + ", ".join(f"{K}: {v:.3f}" for K, v in zip(Ks, ratios))
            + f"; log-ratio limit {t}; consensus x{c2:.2f} at K={Ks[-1]}"
        )
        short.append(f"{tau}: {math.exp(t.exponent):.3f}")
    return dict(
        verdict=_combine(verdicts),
        measured="ratio limit by tau " + ", ".join(short),
        predicted=f"1 (log within +- {RATE_DELTA:g})",
        detail="; ".join(parts),
        extra={"per_tau": {str(k): t.to_dict() for k, t in tests.items()}},
    )


def check_delay_rate(cfg, data):
    """tau-OSGP, tau in ``taus`` (> 0), random delays: the stationarity average ~ K^(-1/2) (the same
    exponent test as tau = 0, over the K of ``Ks``)."""
    get = {(r["K"], r["tau"]): r for r in data["delays"]["runs"]}
    parts, verdicts, tests = [], [], {}
    for tau in [t for t in cfg.taus if t]:
        Y = np.array([get[K, tau]["stationarity"] for K in cfg.Ks]).T
        t = rates.test_exponent(list(cfg.Ks), Y, predicted=-0.5, delta=RATE_DELTA, omega=RATE_OMEGA)
        tests[f"tau={tau}"] = t
        verdicts.append(t.verdict)
        parts.append(
            f"tau={tau} ({data['delays']['schedule']}, random delays): {t}; local slopes "
            + ", ".join(f"{v:.3f}" for v in t.local_slopes)
        )
    return _exponent_result(tests, verdicts, parts, -0.5)


def check_delay_consensus(cfg, data):
    """tau-OSGP: the consensus bound (b2) with the product constant S2 of each tau's augmented
    schedule, run by run, and the growth of the consensus average with tau set beside the bound's."""
    d = data["delays"]
    get = {(r["K"], r["tau"]): r for r in d["runs"]}
    Ks = sorted({r["K"] for r in d["runs"]})
    verdicts, parts, worst, growth = [], [], 0.0, {}
    for tau in cfg.taus:
        S2 = d["products"][str(tau)]["S2"]
        tau_worst = 0.0
        for K in Ks:
            r = get[K, tau]
            G2 = math.sqrt(r["G2sq"]) if r.get("G2sq") else None
            if S2 is None or not math.isfinite(S2) or G2 is None or r["weight_min"] <= 0:
                verdicts.append("inconclusive")
                continue
            # (b2) with the weight floor of each step k (delays drain the weights early on): E Xi^k
            # (min_i w_i^k)^2 <= (gamma S2 G2)^2 for every k
            bound = theory.evaluate(theory.CONSENSUS_BOUND_L2, gamma=r["gamma"], S2=S2, G2=G2, delta=1.0)
            ratio = r["consensus_w2_max"] / bound
            tau_worst = max(tau_worst, ratio)
            verdicts.append("pass" if ratio <= 1 else "fail")
        worst = max(worst, tau_worst)
        K = Ks[-1]
        r, r0 = get[K, tau], get[K, cfg.taus[0]]
        meas = float(np.mean(r["consensus"]) / np.mean(r0["consensus"]))
        S20 = d["products"][str(cfg.taus[0])]["S2"]
        pred = None
        if S2 and S20 and r.get("G2sq") and r0.get("G2sq") and math.isfinite(S2) and math.isfinite(S20):
            pred = float((S2 / S20) ** 2 * r["G2sq"] / r0["G2sq"])
        growth[str(tau)] = {"measured": meas, "bound": pred, "S2": S2}
        parts.append(
            f"tau={tau}: S2 = {_f(S2)}, worst max_k Xi^k / bound over K = {tau_worst:.3g}; consensus "
            f"average x{meas:.3g} of tau={cfg.taus[0]} at K={K} (the bound's factor x{_f(pred)})"
        )
    short = ", ".join(f"{t}: x{g['measured']:.2f} (bound x{_f(g['bound'])})" for t, g in growth.items())
    return dict(
        verdict=_combine(verdicts),
        measured=f"max ratio {worst:.3g}; growth by tau {short}",
        predicted="<= 1",
        detail="; ".join(parts) + "; S2 from dense products of the augmented matrices "
        "(random delays: the run's realisation, sampled starts)",
        extra={"slack": worst, "growth": growth},
    )


def _series(runs, key, Ks):
    get = {r["K"]: r for r in runs}
    return np.array([get[K][key] for K in Ks]).T  # (R, len(Ks))


def check_topologies(cfg, data):
    """Topology enters only higher-order terms: the log of the stationarity ratio of each compared
    schedule to the exponential graph tends to 0 as K -> oo (paired by replica; K^-1/2 and K^-1
    correction terms)."""
    tp = data["topologies"]
    Ks = list(cfg.topology_Ks)
    ref = tp["schedules"][tp["reference"]]
    B = _series(ref["runs"], "stationarity", Ks)
    verdicts, parts, short, tests = [], [], [], {}
    for label, sch in tp["schedules"].items():
        if label in (tp["reference"], tp["more_peers"]):
            continue
        Y = np.log(_series(sch["runs"], "stationarity", Ks) / B)
        t = rates.test_limit(np.asarray(Ks, float), Y, predicted=0.0, delta=RATE_DELTA, omega=RATIO_OMEGAS)
        tests[label] = t
        verdicts.append(t.verdict)
        c = np.exp(np.log(_series(sch["runs"], "consensus", Ks) / _series(ref["runs"], "consensus", Ks)).mean(0))
        parts.append(
            f"{label}/exponential stationarity ratio by K "
            + ", ".join(f"{K}: {v:.3f}" for K, v in zip(Ks, np.exp(Y.mean(0))))
            + f"; log-ratio limit {t}; consensus ratio "
            f"x{c[-1]:.3g} at K={Ks[-1]} (S2 {_f(sch['S2'])} vs {_f(ref['S2'])}; q {_f(sch['q'])} vs {_f(ref['q'])})"
        )
        short.append(f"{label} {math.exp(t.exponent):.3f}")
    return dict(
        verdict=_combine(verdicts),
        measured="ratio limit " + ", ".join(short),
        predicted=f"1 (log within +- {RATE_DELTA:g})",
        detail="; ".join(parts),
        extra={"per_schedule": {k: t.to_dict() for k, t in tests.items()}},
    )


def check_peers(cfg, data):
    """One more peer per step: the consensus constant S2 and the consensus average improve (log
    ratio limit below 0), the stationarity ratio tends to 1 (same leading term); q is reported."""
    tp = data["topologies"]
    Ks = list(cfg.topology_Ks)
    a, b = tp["schedules"][tp["reference"]], tp["schedules"][tp["more_peers"]]
    x = np.asarray(Ks, float)
    S = np.log(_series(b["runs"], "stationarity", Ks) / _series(a["runs"], "stationarity", Ks))
    C = np.log(_series(b["runs"], "consensus", Ks) / _series(a["runs"], "consensus", Ks))
    ts = rates.test_limit(x, S, predicted=0.0, delta=RATE_DELTA, omega=RATIO_OMEGAS)
    # "improves": the limit of the log consensus ratio lies below 0 (an upper bound at 0)
    tc = rates.test_limit(x, C, predicted=-RATE_DELTA, delta=RATE_DELTA, omega=RATIO_OMEGAS, bound_only=True)
    s2_ok = None if a["S2"] is None or b["S2"] is None else b["S2"] < a["S2"]
    verdicts = [ts.verdict, tc.verdict, "inconclusive" if s2_ok is None else ("pass" if s2_ok else "fail")]
    qa, qb = (sch["q_exact"] if sch.get("q_exact") is not None else sch.get("q_lyapunov") for sch in (a, b))
    q_note = ""
    if qa is not None and qb is not None:
        q_note = f"; q (exact or Lyapunov) {qa:.4g} -> {qb:.4g}: " + (
            "improves"
            if qb < qa
            else "does NOT improve (reported, not a criterion: with one peer the exponential graph averages "
            "exactly in log2(n) steps when n is a power of 2, q = 0)"
        )
    detail = (
        f"{tp['more_peers']} vs exponential ({cfg.peers} peer(s)): stationarity ratio by K "
        + ", ".join(f"{K}: {v:.3f}" for K, v in zip(Ks, np.exp(S.mean(0))))
        + f"; log-ratio limit {ts}; "
        f"consensus ratio by K "
        + ", ".join(f"{K}: {v:.3f}" for K, v in zip(Ks, np.exp(C.mean(0))))
        + f"; log consensus-ratio limit {tc}; S2 {_f(a['S2'])} -> {_f(b['S2'])}"
        + q_note
    )
    return dict(
        verdict=_combine(verdicts),
        measured=f"stationarity ratio limit {math.exp(ts.exponent):.3f}; consensus x{math.exp(tc.exponent):.3f}; "
        f"S2 {_f(a['S2'])} -> {_f(b['S2'])}",
        predicted=f"stationarity 1 (log +- {RATE_DELTA:g}); consensus and S2 smaller",
        detail=detail,
        extra={"stationarity": ts.to_dict(), "consensus": tc.to_dict(), "S2": [a["S2"], b["S2"]], "q": [qa, qb]},
    )


def check_scaling(cfg, data):
    """The consensus average is a quadratic form of the driving noise and heterogeneity: scaling
    both by s multiplies it by s^2 in the limit, and the two contributions add (the cross term
    vanishes): log ratios paired by replica, extrapolated as K -> oo."""
    sc = data["scaling"]
    Ks = list(cfg.scaling_Ks)
    x = np.asarray(Ks, float)
    get = {k: _series(v["runs"], "consensus", Ks) for k, v in sc["settings"].items()}
    s2 = sc["factor"] ** 2
    B = get["base"]
    joint = np.log(get["both"] / B)
    add = get["noise"] + get["heterogeneity"] - B
    if np.any(add <= 0):
        return dict(
            verdict="fail",
            measured="noise + heterogeneity - base <= 0",
            predicted=f"{s2:g}",
            detail="the separate contributions do not add up to a positive consensus average",
        )
    add = np.log(add / B)
    tj = rates.test_limit(x, joint, predicted=math.log(s2), delta=RATE_DELTA, omega=RATIO_OMEGAS)
    ta = rates.test_limit(x, add, predicted=math.log(s2), delta=RATE_DELTA, omega=RATIO_OMEGAS)
    rn = np.exp(np.log(get["noise"] / B).mean(0))
    rh = np.exp(np.log(get["heterogeneity"] / B).mean(0))
    # the shares of noise and heterogeneity at the largest K, from the separate scalings
    a_n, a_h = (rn[-1] - 1) / (s2 - 1), (rh[-1] - 1) / (s2 - 1)
    detail = (
        f"{sc['schedule']}, sigma and heterogeneity scaled by {sc['factor']:g} (zeta^2, sigma^2 x{s2:g}): "
        "both: ratio by K "
        + ", ".join(f"{K}: {v:.3f}" for K, v in zip(Ks, np.exp(joint.mean(0))))
        + f"; limit {tj}; additivity (noise + heterogeneity - base)/base: limit {ta}; noise alone x{rn[-1]:.3f}, "
        f"heterogeneity alone x{rh[-1]:.3f} at K={Ks[-1]} (shares {a_n:.2f} noise, {a_h:.2f} heterogeneity); the "
        f"bound (b2) is (gamma S2 G2/delta)^2 with G2^2 ~ sigma^2 + zeta^2 at a stationary point: x{s2:g} too"
    )
    return dict(
        verdict=_combine([tj.verdict, ta.verdict]),
        measured=f"both x{math.exp(tj.exponent):.3f}, additive x{math.exp(ta.exponent):.3f}",
        predicted=f"x{s2:g} (log +- {RATE_DELTA:g})",
        detail=detail,
        extra={"joint": tj.to_dict(), "additive": ta.to_dict(), "shares": [a_n, a_h]},
    )


def check_complexity(cfg, data):
    """Linear speedup as iteration complexity: the iterations K_n(eps) to reach a stationarity level
    eps fall like 1/n. Levels eps_j: the geometric mean over n of the replica-mean stationarity at
    budget T_j = n K; per replica, K_n(eps_j) by log-log interpolation along each n's ladder; the
    slope of log K_n(eps_j) in log n, extrapolated as T_j -> oo (K^-1/2 correction)."""
    cx = data["complexity"]
    ns, Ts = cx["ns"], cx["budgets"]
    get = {(r["n"], r["budget"]): np.log(np.asarray(r["stationarity"], float)) for r in cx["runs"]}
    R = len(next(iter(get.values())))
    levels = [float(np.mean([get[n, T].mean() for n in ns])) for T in Ts]
    u = np.log(np.asarray(ns, float))
    uc = u - u.mean()
    ladders = [(np.log(np.array([T // n for T in Ts], float)), np.array([get[n, T] for T in Ts]).T) for n in ns]
    E = np.empty((R, len(Ts)))
    for j, lev in enumerate(levels):
        LK = np.array([[rates.iterations_to(logK, Y[r], lev) for logK, Y in ladders] for r in range(R)])  # (R, len(ns))
        E[:, j] = (LK - LK.mean(axis=1, keepdims=True)) @ uc / float(uc @ uc)
    t = rates.test_limit(np.asarray(Ts, float), E, predicted=-1.0, delta=RATE_DELTA, omega=RATE_OMEGA)
    detail = (
        f"exponential graph, n = {', '.join(map(str, ns))}, budgets T = nK = {', '.join(map(str, Ts))}: levels "
        + ", ".join(f"{math.exp(v):.3g}" for v in levels)
        + "; slope of log K_n(eps) in log n by level "
        + ", ".join(f"{v:.3f}" for v in E.mean(0))
        + f"; limit {t}"
    )
    return dict(
        verdict=t.verdict,
        measured=f"{t.exponent:.3f} [{t.ci_low:.3f}, {t.ci_high:.3f}]",
        predicted=f"-1 +- {RATE_DELTA:g}",
        detail=detail,
        extra={
            "exponent": t.exponent,
            "interval": [t.ci_low, t.ci_high],
            "test": t.to_dict(),
            "levels": [math.exp(v) for v in levels],
        },
    )


def check_mixing_constants(cfg, data):
    """The mixing assumptions hold on every schedule of the setting, and the constants
    mean something: the envelope (C, q) bounds every deviation measured over the whole
    horizon (to round-off), the theory's q is a valid bound (log space), and the
    measured weight floor is above the theory's."""
    verdicts, parts = [], []
    for label, r in data["mixing"]["schedules"].items():
        fails = list(r.get("violations", ()))
        if not r.get("envelope_horizon_ok", True):
            fails.append("the deviation series neither reaches round-off nor spans 10 fit windows")
        if r.get("envelope_worst_ratio") is not None and r["envelope_worst_ratio"] > 1 + 1e-9:
            fails.append(f"envelope exceeded by x{r['envelope_worst_ratio']:.3g}")
        if r.get("q_theory_valid") is False:
            fails.append(
                f"log10(1 - q_theory) = {r['q_theory_log10_gap']:.3g} > log10(1 - q_true) = {r['q_true_log10_gap']:.3g}"
            )
        if r.get("weight_floor_ok") is False:
            fails.append(f"weight_min {r['weight_min']:.3g} < delta_theory {r['delta_theory']:.3g}")
        verdicts.append("fail" if fails else "pass")
        gamma = math.sqrt(cfg.n / min(cfg.Ks))
        L = data.get("rates", {}).get("constants", {}).get("L")
        eff = (
            (
                f"; effective step gamma/w_min at K = {min(cfg.Ks)}: {gamma / r['weight_min']:.3g}"
                + (f" vs 1/L = {1 / L:.3g}" if L else "")
            )
            if r["weight_min"] > 0
            else ""
        )
        parts.append(
            f"{label}: {'holds' if not fails else 'FAILS: ' + '; '.join(fails)}; B = {r.get('B')}, "
            f"weights >= {r['weight_min']:.3g} (delta_theory {_f(r.get('delta_theory'))}), "
            f"q_exact = {_f(r.get('q_exact'))}, q_lyapunov = {_f(r.get('q_lyapunov'))}, envelope "
            f"C = {_f(r.get('C'))}, q = {_f(r.get('q'))} ({r.get('q_source')}); fitted C = {_f(r.get('C_fit'))}, "
            f"q = {_f(r.get('q_fit'))} (worst deviation / fitted envelope "
            f"{_f(r.get('fit_envelope_worst_ratio'))}); log10(1 - q_theory) = {_f(r.get('q_theory_log10_gap'))}" + eff
        )
    fam_bad = []
    for r in data["mixing"]["families"]:
        if r.get("q_theory_valid") is False or (r.get("envelope_worst_ratio") or 0) > 1 + 1e-9:
            fam_bad.append(r["topology"])
        parts.append(
            f"{r['topology']}: envelope q = {_f(r.get('q'))} ({r.get('q_source')}), q_fit = {_f(r.get('q_fit'))}, "
            f"log10(1 - q_theory) = {_f(r.get('q_theory_log10_gap'))}, weights >= {r['weight_min']:.3g}"
        )
    if fam_bad:
        verdicts.append("fail")
        parts.append("families failing: " + ", ".join(fam_bad))
    n_ok = sum(v == "pass" for v in verdicts[: len(data["mixing"]["schedules"])])
    return dict(
        verdict=_combine(verdicts),
        measured=f"{len(data['mixing']['schedules'])} schedule(s), {n_ok} hold; "
        f"{len(data['mixing']['families'])} families",
        predicted="assumptions hold; constants valid",
        detail="; ".join(parts),
    )


def _f(v):
    return "None" if v is None else f"{v:.3g}"


def check_baselines(cfg, data):
    """SGP/AllReduce and D-PSGD/AllReduce: log of the stationarity ratio tends to 0 as K -> oo
    (same leading term), paired by replica, extrapolated in K^-1/2."""
    verdicts, parts, short = [], [], []
    for label, sch in data["baselines"]["schedules"].items():
        get = {(r["K"], r["algorithm"]): r for r in sch["runs"]}
        Ks = sorted({r["K"] for r in sch["runs"]})
        for alg in ("sgp", "dpsgd"):
            if (Ks[0], alg) not in get:
                continue
            t = _log_ratio_limit(get, Ks, alg, "allreduce")
            verdicts.append(t.verdict)
            ratios = [
                float(np.mean(get[K, alg]["stationarity"]) / np.mean(get[K, "allreduce"]["stationarity"])) for K in Ks
            ]
            parts.append(
                f"{label} {alg}/allreduce by K " + ", ".join(f"{K}: {v:.3f}" for K, v in zip(Ks, ratios)) + f"; {t}"
            )
            short.append(f"{label.split('(')[0]} {alg} {math.exp(t.exponent):.3f}")
    return dict(
        verdict=_combine(verdicts),
        measured="ratio limit " + ", ".join(short),
        predicted=f"1 (log within +- {RATE_DELTA:g})",
        detail="; ".join(parts) + "; same problem, topology and seeds",
    )


# ---------------------------------------------------------------- the claims


def _c(name, desc, exps, **variant):
    return Control(name, desc, Variant(name=name, **variant), exps)


#: The control of topology-ratio and peers: one unit of the topology experiment serves both.
_SHARED_NOISE_COMPARED = _c(
    "shared-noise",
    "on the compared schedules, gradient noise of the declared variance "
    "common to all nodes (workers seeded alike; the reference intact): the leading term "
    "changes",
    ("topologies",),
    shared_noise=True,
)

CLAIMS = (
    Claim(
        "stationarity-rate",
        "Theorem 1: (1/K) sum_k E||grad f(xbar^k)||^2 = O(1/sqrt(nK)) with gamma = sqrt(n/K)",
        ("rates",),
        "extrapolated exponent in K of the stationarity average (local slopes over doublings "
        "regressed on K^-1/2), t interval over replicas",
        f"pass iff the 95% interval lies in -1/2 +- {RATE_DELTA} on every schedule; fail iff outside (two-sided: "
        "with noise the rate is attained); inconclusive if the K^-1/2 correction model is rejected "
        "(p < 0.01) or the interval is wider than delta; fail also if the local slopes move away from the band and the "
        "last lies outside it",
        _c("constant-step", "gamma = sqrt(n/K_min) at every K instead of sqrt(n/K)", ("rates",), step="constant"),
        check_stationarity_rate,
    ),
    Claim(
        "consensus-rate",
        "Theorem 1: (1/K) sum_k (1/n) sum_i E||xbar^k - z_i^k||^2 = O(1/K)",
        ("rates",),
        "extrapolated exponent in K of the consensus average",
        f"pass iff the 95% interval lies in -1 +- {RATE_DELTA} on every schedule; fail iff outside; "
        "inconclusive as for stationarity-rate",
        _c(
            "no-debias",
            "push-sum without de-biasing (z = x) on a schedule whose weights move",
            ("rates",),
            debias=False,
        ),
        check_consensus_rate,
    ),
    Claim(
        "linear-speedup",
        "Theorem 1: the leading term (2 Delta + L sigma^2)/sqrt(nK) falls like n^-1/2 at fixed K (K large)",
        ("speedup",),
        "slope in n of the stationarity average at each K, extrapolated in K^-1/2 to K -> oo",
        f"pass iff the 95% interval of the extrapolated slope lies in -1/2 +- {RATE_DELTA} on every schedule; "
        "fail iff outside; inconclusive otherwise",
        _c(
            "shared-noise",
            "gradient noise of the declared variance common to all nodes (workers seeded alike): "
            "averaging over nodes no longer reduces it",
            ("speedup",),
            shared_noise=True,
        ),
        check_linear_speedup,
    ),
    Claim(
        "theorem1-bound",
        "Theorem 1: (1/K) sum E||grad f(xbar^k)||^2 <= 12 (f(xbar^0) - f* + L sigma^2/2)/sqrt(nK) for K above "
        "a threshold (known part max(n L^4 C^4 60^2/(1-q)^4, n))",
        ("theorem",),
        "measured / bound at K = max(threshold, K_max), Delta with the true f*",
        "pass iff measured/bound <= 1 on every schedule where a run reaches the threshold computed from the "
        "envelope (C, q) minimising it among envelopes valid over the horizon; inconclusive (outside the "
        "theorem's regime) where no run reaches it; fail iff > 1 where it applies",
        _c(
            "biased-gradient",
            "a constant gradient bias of norm sigma (e.g. a biased compressor)",
            ("theorem",),
            bias=1.0,
        ),
        check_theorem1,
    ),
    Claim(
        "descent-inequality",
        "docs/theory.md (a): (1/K) sum E||grad f(xbar^k)||^2 <= 2(f0 - E f(xbar^K))/(gamma K) + L gamma "
        "sigma^2/n + L^2 Xi for gamma <= 1/L",
        ("descent",),
        "LHS - RHS per replica, one-sided t over replicas",
        "pass iff E[LHS - RHS] <= 0 is not rejected at 95% in every run; inconclusive where gamma L > 1",
        _c(
            "biased-gradient",
            "a constant gradient bias of norm sigma (e.g. a biased compressor)",
            ("descent",),
            bias=1.0,
        ),
        check_descent,
    ),
    Claim(
        "consensus-bound",
        "docs/theory.md (b2): E Xi^k <= (gamma S2 G2 / delta)^2 for every k",
        ("rates", "mixing"),
        "max over k of the replica mean of Xi^k over the bound, each run",
        "pass iff max_k E Xi^k <= bound in every run (S2 measured on the schedule, G2 and delta on the run)",
        _c(
            "no-debias",
            "push-sum without de-biasing (z = x) on a schedule whose weights move",
            ("rates",),
            debias=False,
        ),
        check_consensus_bound,
    ),
    Claim(
        "combined-bound",
        "docs/theory.md (c2): (1/K) sum E||grad f(xbar^k)||^2 <= 2 Delta/(gamma K) + L gamma sigma^2/n "
        "+ L^2 (gamma S2 G2/delta)^2",
        ("rates", "mixing"),
        "stationarity average over the bound, each run, Delta with the true f*",
        "pass iff the one-sided 95% lower confidence limit of the stationarity average is <= the bound in every "
        "run with gamma L <= 1",
        _c("biased-gradient", "a constant gradient bias of norm sigma", ("rates",), bias=1.0),
        check_combined_bound,
    ),
    Claim(
        "mass-conservation",
        "THEORY.md sections 2-3: xbar^{k+1} = xbar^k - (gamma/n) sum_i g_i (mass in flight included); weights sum to n",
        ("rates", "speedup", "descent", "delays", "baselines", "theorem", "topologies", "scaling", "complexity"),
        "max mass and weight error over every SGP run, over 64 eps K n scale",
        "pass iff every mass and weight error is within 64 eps K n scale (round-off)",
        _c(
            "message-loss",
            "0.1% of messages lost in flight (the sender does not keep the share)",
            ("rates",),
            loss=0.001,
        ),
        check_mass,
    ),
    Claim(
        "delay-robustness",
        "tau-OSGP: delays enter only higher-order terms (same leading term as SGP)",
        ("delays",),
        "log of the stationarity ratio tau / tau=0, paired by replica, at each K, extrapolated "
        "to K -> oo with K^-1/2 and K^-1 correction terms",
        f"pass iff, for every tau, the 95% interval of the limit lies in 0 +- {RATE_DELTA} (the exponent test's "
        "rules); fail iff outside, or the ratios recede from 1; inconclusive otherwise",
        _c(
            "message-loss",
            "0.1% of the delayed runs' messages lost in flight (tau = 0 reference intact)",
            ("delays",),
            loss=0.001,
        ),
        check_delays,
    ),
    Claim(
        "delay-rate",
        "tau-OSGP: the stationarity average decays like K^-1/2 for every tau (random delays up to tau)",
        ("delays",),
        "extrapolated exponent in K of the stationarity average per tau in taus (> 0), on the K of Ks",
        f"pass iff, for every tau, the 95% interval lies in -1/2 +- {RATE_DELTA}; fail iff outside, or the local "
        "slopes recede from the band; inconclusive otherwise (as for stationarity-rate)",
        _c("constant-step", "gamma = sqrt(n/K_min) at every K instead of sqrt(n/K)", ("delays",), step="constant"),
        check_delay_rate,
    ),
    Claim(
        "delay-consensus",
        "tau-OSGP: the consensus error stays within the derived bound (b2) for every tau, the delays entering "
        "through the product constant S2 of the augmented schedule",
        ("delays",),
        "max over k of E[Xi^k] delta_k^2 / (gamma S2(tau) G2)^2 (delta_k: the weight floor of step k), "
        "each run; growth of the consensus average with tau beside the bound's",
        "pass iff the ratio is <= 1 in every run of every tau (S2 from the augmented schedule, G2 and delta_k "
        "from the run)",
        _c(
            "no-debias",
            "push-sum without de-biasing (z = x) on the delayed runs (delays move the weights)",
            ("delays",),
            debias=False,
        ),
        check_delay_consensus,
    ),
    Claim(
        "topology-ratio",
        "Theorem 1: the topology enters only higher-order terms: the stationarity average on another schedule "
        "over that on the exponential graph tends to 1",
        ("topologies",),
        "log of the stationarity ratio to the exponential graph, paired by replica, at each K "
        "of topology_Ks, extrapolated to K -> oo with K^-1/2 and K^-1 correction terms",
        f"pass iff, for every compared schedule, the 95% interval of the limit lies in 0 +- {RATE_DELTA}; fail "
        "iff outside, or the ratios recede from 1; inconclusive otherwise",
        _SHARED_NOISE_COMPARED,
        check_topologies,
    ),
    Claim(
        "peers",
        "One more peer per step improves mixing (the consensus constant and the consensus error) and leaves the "
        "leading stationarity term unchanged",
        ("topologies",),
        "log ratios (more peers / fewer) of the stationarity and consensus averages, paired "
        "by replica, extrapolated to K -> oo; S2 of both schedules; q reported",
        f"pass iff the stationarity limit's 95% interval lies in 0 +- {RATE_DELTA}, the consensus limit's interval "
        "lies below 0 and S2 is smaller; fail iff either limit's interval lies on the wrong side or S2 is "
        "larger; inconclusive otherwise",
        _SHARED_NOISE_COMPARED,
        check_peers,
    ),
    Claim(
        "consensus-scaling",
        "The consensus error is driven by the gradient noise and the heterogeneity: O(gamma^2 (sigma^2 + "
        "zeta^2)) (bound b2 with G2^2 ~ sigma^2 + zeta^2): scaling sigma and zeta by s scales it by s^2",
        ("scaling",),
        "log ratios of the consensus average (both scaled / base; noise-scaled + heterogeneity-"
        "scaled - base over base), paired by replica, extrapolated to K -> oo with K^-1/2 and K^-1 terms",
        f"pass iff both limits' 95% intervals lie in log(s^2) +- {RATE_DELTA}; fail iff either lies outside; "
        "inconclusive otherwise",
        _c(
            "no-debias",
            "push-sum without de-biasing (z = x) on a schedule whose weights move",
            ("scaling",),
            debias=False,
        ),
        check_scaling,
    ),
    Claim(
        "iteration-complexity",
        "Linear speedup as iteration complexity: the iterations to reach a stationarity level fall like 1/n",
        ("complexity",),
        "slope in log n of log K_n(eps) (log-log interpolation along each n's ladder of budgets "
        "T = nK), at levels eps set by the budgets, extrapolated as T -> oo with a T^-1/2 term",
        f"pass iff the 95% interval of the limit lies in -1 +- {RATE_DELTA}; fail iff outside; inconclusive otherwise",
        _c(
            "shared-noise",
            "gradient noise of the declared variance common to all nodes (workers seeded alike)",
            ("complexity",),
            shared_noise=True,
        ),
        check_complexity,
    ),
    Claim(
        "mixing-constants",
        "Assumption 3 and the product lemma: column-stochastic, positive self-weights, B-strongly connected; "
        "|P^(k:s)_ij - phi_i| <= C q^(k-s)",
        ("mixing",),
        "check_mixing on every schedule of the setting; worst deviation over the envelope C q^t "
        "over the whole measured horizon",
        "pass iff every assumption holds on every schedule and the envelope bounds every measured deviation",
        _c(
            "disconnected",
            "the setting's schedule with every message to node 0 removed (not strongly connected)",
            ("mixing",),
            disconnect=True,
        ),
        check_mixing_constants,
    ),
    Claim(
        "baselines",
        "SGP, D-PSGD and AllReduce SGD share the leading term of the rate",
        ("baselines",),
        "log of the stationarity ratio to AllReduce, paired by replica, at each K, extrapolated "
        "to K -> oo with K^-1/2 and K^-1 correction terms",
        f"pass iff the 95% interval of each limit lies in 0 +- {RATE_DELTA}; fail iff outside, or the ratios "
        "recede from 1; inconclusive otherwise",
        _c(
            "no-debias", "SGP without de-biasing (z = x) on a schedule whose weights move", ("baselines",), debias=False
        ),
        check_baselines,
    ),
)

CHECK_NAMES = tuple(c.name for c in CLAIMS)
#: How each verdict is decided (fixed a priori; printed in the report).
CRITERIA = {c.name: c.criterion for c in CLAIMS}
_BY_NAME = {c.name: c for c in CLAIMS}


# ---------------------------------------------------------------- running


def _run_experiments(cfg, seed, keys, variant=NONE, progress=None, base=None):
    data = {}
    sch = None if variant == NONE else _pick(cfg, variant)
    for key in keys:
        try:
            _run_experiment(cfg, seed, key, variant, progress, base, data, sch)
        except SimulationDivergedError as exc:
            # a run that blows up is a finding about the setting (step size, weight floor), not a
            # user mistake: every check that needs this experiment is inconclusive and says why
            data[key] = {"error": str(exc)}
        except NotApplicable as exc:
            data[key] = {"error": str(exc), "not_applicable": True}
            if progress:
                progress(f"{key}: diverged")
    return data


def _run_experiment(cfg, seed, key, variant, progress, base, data, sch):
    """Run experiment ``key`` into ``data`` (``sch``: the schedules a control runs on)."""
    if key == "theorem":
        mix = (base or data)["mixing"]
        if "error" in mix:
            raise SimulationDivergedError(mix["error"])
        # runs only where the threshold is reached (so a control runs only where the theorem applies)
        data[key] = exp_theorem(cfg, seed, mix, variant, progress)
    elif key in ("rates", "speedup", "baselines"):
        data[key] = EXPERIMENTS[key](cfg, seed, variant, progress, schedules=sch)
    else:
        data[key] = EXPERIMENTS[key](cfg, seed, variant, progress)


def exp_weights(cfg, seed, variant=NONE, progress=None):
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


EXPERIMENTS = {
    "mixing": exp_mixing,
    "rates": exp_rates,
    "speedup": exp_speedup,
    "descent": exp_descent,
    "delays": exp_delays,
    "baselines": exp_baselines,
    "topologies": exp_topologies,
    "scaling": exp_scaling,
    "complexity": exp_complexity,
    "weights": exp_weights,
}
EXPERIMENT_ORDER = (
    "mixing",
    "rates",
    "speedup",
    "descent",
    "theorem",
    "delays",
    "baselines",
    "topologies",
    "scaling",
    "complexity",
    "weights",
)


def _control_data(key, main, ctl):
    """A control unit's data completed with what it shares with the main run: the delay
    experiment's tau = 0 reference and product constants, the topology experiment's reference
    schedule and every schedule's constants (the departures leave them unchanged)."""
    if "error" in main or "error" in ctl:
        return ctl
    if key == "delays":
        ref = [r for r in main["runs"] if r["tau"] == 0]
        return {**ctl, "runs": ref + ctl["runs"], "products": main["products"]}
    if key == "topologies":
        sch = {
            lab: {**{k: v for k, v in m.items() if k != "runs"}, **ctl["schedules"].get(lab, {"runs": m["runs"]})}
            for lab, m in main["schedules"].items()
        }
        return {**ctl, "schedules": sch}
    return ctl


def _evaluate(claim, cfg, data):
    errors = [
        f"{k}: {data[k]['error']}"
        for k in claim.experiments
        if k in data and "error" in data[k] and not data[k].get("not_applicable")
    ]
    if claim.name == "theorem1-bound" and "error" in data.get("mixing", {}):
        errors.append(f"mixing: {data['mixing']['error']}")
    na = [f"{k}: {data[k]['error']}" for k in claim.experiments if data.get(k, {}).get("not_applicable")]
    if na and len(na) == len([k for k in claim.experiments if k in data]):  # else the check uses the others
        return dict(
            verdict="inconclusive", measured="not applicable to this setting", predicted="-", detail="; ".join(na)
        )
    if errors:
        return dict(
            verdict="inconclusive",
            measured="a run diverged",
            predicted="-",
            detail="; ".join(errors) + " (outside the step-size regime of the analysis: see the effective "
            "step gamma / w_min against 1/L)",
        )
    return claim.check(cfg, data)


def _make_check(claim, cfg, data):
    res = _evaluate(claim, cfg, data)
    return Check(
        name=claim.name,
        verdict=res["verdict"],
        measured=res["measured"],
        predicted=res["predicted"],
        criterion=claim.criterion,
        detail=res["detail"],
        code=_code(claim.check),
        extra=res.get("extra", {}),
    )


def _unit(cfg, seed, key, variant, mixing):
    """One independent unit of work: experiment ``key`` under ``variant``. Deterministic in
    (cfg, seed, key, variant), so any executor gives the same bits; module-level, so picklable."""
    base = {"mixing": mixing} if mixing is not None else None
    return _run_experiments(cfg, seed, (key,), variant, None, base=base)[key]


def plan_units(config=QUICK, controls=False, only=None):
    """The independent units of :func:`run_suite`: ``(experiment key, Variant)`` pairs, in run order.

    Found from :data:`CLAIMS` (the experiments of the chosen checks and of their
    controls) and :data:`EXPERIMENT_ORDER`; ``("mixing", NONE)`` is among them
    when Theorem 1 is checked (its units need the main mixing data).
    """
    if only is not None:
        unknown = sorted(set(only) - set(CHECK_NAMES))
        if unknown:
            raise ValueError(f"check must be one of {', '.join(CHECK_NAMES)}, got {unknown[0]!r}")
    claims = [c for c in CLAIMS if only is None or c.name in set(only)]
    keys = set()
    for c in claims:
        keys.update(c.experiments)
    if "theorem" in keys:
        keys.add("mixing")
    keys.add("weights")
    order = list(EXPERIMENT_ORDER) + sorted(keys - set(EXPERIMENT_ORDER))
    units = [(k, NONE) for k in order if k in keys]
    if controls:
        for c in claims:
            for k in c.control.experiments:
                if (k, c.control.variant) not in units:
                    units.append((k, c.control.variant))
    return units


#: Relative cost of a unit (CPU seconds of the quick preset on this project's machine, main run and
#: its costliest control, numpy path, measured 2026-12-01 by timing each unit of
#: ``plan_units(QUICK, controls=True)`` alone); only the order in which units are handed to the
#: workers depends on it, never a result.
_COSTS = {
    "scaling": (14, 16),
    "delays": (13, 11),
    "topologies": (12, 13),
    "speedup": (8, 6),
    "theorem": (4, 5),
    "complexity": (3, 4),
    "rates": (5, 3),
    "baselines": (4, 1),
    "descent": (1, 1),
}


def _unit_cost(unit):
    key, variant = unit
    main, ctl = _COSTS.get(key, (1, 1))
    return main if variant == NONE else ctl


def _setting_code(cfg):
    """Fingerprints of the user's code in the setting (problem, schedules), for the cache key;
    None if some of it is not pinned by a file (a lambda, a local function): not cached."""
    from .sweep import code_fingerprint

    out = {}
    specs = [("problem", cfg.problem)] + [(f"topologies[{i}]", t) for i, t in enumerate(cfg.topologies)]
    for what, spec in specs:
        if isinstance(spec, str) and ":" not in spec:
            continue  # built in: covered by sgpverify's own source
        fp = code_fingerprint(_load_attr(spec) if isinstance(spec, str) else spec)
        if fp is None:
            return None
        out[what] = fp
    return out


def _suite_unit(config, seed, k, v, mixing, setting, cache):
    from .sweep import Unit, unit_key

    key = None
    if cache is not None and setting is not None:
        try:
            key = unit_key(
                {
                    "kind": "verify",
                    "config": config.to_dict(),
                    "setting": setting,
                    "seed": seed,
                    "experiment": k,
                    "variant": dataclasses.asdict(v),
                }
            )
        except TypeError:  # a setting value that is not JSON: not cached
            key = None
    return Unit(f"{k} ({v.name})", _unit, (config, seed, k, v, mixing if k == "theorem" else None), key)


def _upload_files(cfg):
    """The file of a MODULE:ATTR problem, for dask workers that cannot import it from here."""
    if isinstance(cfg.problem, str) and ":" in cfg.problem:
        mod = sys.modules.get(cfg.problem.partition(":")[0])
        f = getattr(mod, "__file__", None)
        if f and os.path.basename(f) != "__init__.py":
            return [f]
    return []


def run_suite(config=QUICK, seed=0, progress=None, controls=False, only=None, workers=1, scheduler=None, cache=None):
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
        Same bits.
    cache : str or path, optional
        Directory of the unit cache (:class:`sgpverify.sweep.UnitCache`): finished
        units are loaded from it and new ones stored as they finish, so a run
        that was interrupted resumes. Keyed by configuration, seed, experiment,
        variant, sgpverify's source and library versions (and the source file of
        a user's problem or schedule; a lambda disables the cache). Default:
        no cache.
    """
    from ._validate import check_int
    from .sweep import UnitCache, connect, run_units

    workers = check_int("workers", workers, min_value=1)
    if scheduler is not None and workers > 1:
        raise ValueError(
            f"workers and scheduler are exclusive (the cluster has its own workers), got "
            f"workers = {workers} and scheduler = {scheduler!r}"
        )
    t0 = time.perf_counter()
    units = plan_units(config, controls, only)
    claims = [c for c in CLAIMS if only is None or c.name in set(only)]
    store = UnitCache(cache) if cache is not None else None
    setting = _setting_code(config) if store is not None else None
    client, owned = connect(scheduler) if scheduler is not None else (None, False)
    try:
        ex = dict(workers=workers, scheduler=client, cache=store, progress=progress, files=_upload_files(config))
        results = {}
        if ("mixing", NONE) in units and any(k == "theorem" for k, _ in units):
            # the theorem units need the main mixing data: it comes first (about a second)
            results[("mixing", NONE)] = run_units(
                [_suite_unit(config, seed, "mixing", NONE, None, setting, store)], **ex
            )[0]
        mixing = results.get(("mixing", NONE))
        # longest first, so that the last units to finish are short ones (results go back by unit)
        todo = sorted((u for u in units if u not in results), key=_unit_cost, reverse=True)
        done = run_units([_suite_unit(config, seed, k, v, mixing, setting, store) for k, v in todo], **ex)
        results.update(zip(todo, done))
    finally:
        if owned:
            client.close()
    data = {k: results[(k, NONE)] for k, v in units if v == NONE}
    checks = []
    for claim in claims:
        chk = _make_check(claim, config, data)
        if controls:
            ctl = claim.control
            cdata = dict(data)
            cdata.update(
                {
                    k: _control_data(k, data[k], results[(k, ctl.variant)]) if k in data else results[(k, ctl.variant)]
                    for k in ctl.experiments
                }
            )
            cres = _evaluate(claim, config, cdata)
            chk = dataclasses.replace(
                chk,
                control={
                    "name": ctl.name,
                    "description": ctl.description,
                    "verdict": cres["verdict"],
                    "detected": cres["verdict"] == "fail",
                    "measured": cres["measured"],
                },
            )
        checks.append(chk)
    if controls:
        data["controls"] = {f"{v.name}:{k}": results[(k, v)] for k, v in units if v != NONE}
    return SuiteResult(
        config=config, seed=seed, checks=tuple(checks), data=data, seconds=time.perf_counter() - t0, controls=controls
    )


def verify(
    problem=None,
    topology=None,
    *,
    tau=None,
    delay=None,
    preset="quick",
    seed=0,
    controls=False,
    nodes=None,
    dim=None,
    progress=None,
    workers=1,
    scheduler=None,
    cache=None,
    **settings,
):
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
    nodes, dim : int, optional
        n and d of the main experiments.
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
    )


def validate_config(cfg):
    """Check a configuration before running anything (errors name the setting and value)."""
    from ._validate import check_int

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
