"""Claims declared by a user: a theorem of your own, checked by the suite as its own claims are.

A claims file (``sgpverify verify --claims FILE.py``) is a Python file that defines ``CLAIMS``, a
list of :class:`Claim` objects. Each says what is measured (a metric of the run's trace), what it is
predicted to do (:func:`exponent`: a power law in K, n or a parameter of the ladder, with a band;
:func:`bound`: an upper bound as a sympy expression in the problem's constants, K, n and gamma; or
:func:`vanishes`: the metric reaches zero to round-off within the ladder in K), on
which ladder of runs (:class:`Ladder`) and with which method, and its negative control
(:class:`Control`: another method, or a setting under which the claim must fail).

A declared claim becomes the suite's own records -- a :class:`~sgpverify.suite.Claim` and an
:class:`~sgpverify.suite.Experiment` row -- registered beside the built-in ones: the runner, the
unit cache, the controls, settling, the report and the exit status treat both alike. The exponent
test is the suite's (:func:`sgpverify.rates.test_exponent`: local slopes over the ladder, extrapolated,
three verdicts) and every interval is at the suite's level, so settling's error spending holds too.

Examples
--------
>>> from sgpverify import declare
>>> c = declare.Claim(
...     name="my-consensus",
...     statement="consensus average O(1/K)",
...     metric="consensus",
...     prediction=declare.exponent("K", -1.0),
...     ladder=declare.Ladder(Ks=(64, 128, 256), n=8, replicas=4),
...     control=declare.Control("no-debias", "push-sum without de-biasing", debias=False),
... )
>>> c.ladder.axis
'K'
"""

from __future__ import annotations

import dataclasses
import hashlib
import math
from typing import TYPE_CHECKING, Any, Callable

import numpy as np

from . import declared_checks
from .engine.methods import METHODS
from .suite import settle as _settle
from .suite.claims import BY_NAME, register, unregister
from .suite.criteria import RATE_DELTA, RATE_OMEGA
from .suite.departures import NONE, Perturbed, Variant, wrap_topology
from .suite.experiments import EXPERIMENTS, Experiment
from .suite.records import Claim as SuiteClaim
from .suite.records import make_control
from .suite.runs import problem_constants, simulate_run
from .suite.setting import resolve_problem, resolve_topology

if TYPE_CHECKING:
    from .suite.config import SuiteConfig

__all__ = [
    "Claim",
    "Ladder",
    "Control",
    "Exponent",
    "Bound",
    "Vanishes",
    "exponent",
    "bound",
    "vanishes",
    "METRICS",
    "measure",
]


def _series(tr, name: str, K: int) -> np.ndarray:
    a = np.asarray(getattr(tr, name), dtype=float)
    return a.reshape(a.shape[0], -1)  # (T, R)


def _average(name):
    def f(tr, K):
        return _series(tr, name, K)[:K].mean(axis=0)

    return f


def _final(name):
    def f(tr, K):
        return _series(tr, name, K)[K]

    return f


def _tracking(tr, K):
    if tr.tracking_error is None:
        raise ValueError(f"metric 'tracking_error' needs a gradient-tracking method, got a trace of {tr.algorithm!r}")
    return _series(tr, "tracking_error", K).max(axis=0)


#: The built-in metrics, each per replica of a run of K steps (record_every = 1).
METRICS: dict[str, Callable] = {
    "stationarity": _average("grad_norm_sq"),  # (1/K) sum_{k<K} ||grad f(xbar^k)||^2
    "consensus": _average("consensus"),  # (1/K) sum_{k<K} (1/n) sum_i ||z_i^k - xbar^k||^2
    "final_stationarity": _final("grad_norm_sq"),  # ||grad f(xbar^K)||^2
    "final_consensus": _final("consensus"),  # Xi^K
    "tracking_error": _tracking,  # max_k of the tracking invariant's error
}


def measure(metric: str | Callable, trace: Any, K: int) -> list[float]:
    """The values of ``metric`` (a name of :data:`METRICS` or ``callable(trace) -> (R,)``) on a
    trace of ``K`` steps with every step recorded, one per replica."""
    if callable(metric):
        got = np.asarray(metric(trace), dtype=float).reshape(-1)
    else:
        got = np.asarray(METRICS[metric](trace, K), dtype=float).reshape(-1)
    return [float(v) for v in got]


@dataclasses.dataclass(frozen=True)
class Exponent:
    """Prediction ``metric ~ x^value`` as x grows along the ladder (``in_``: "K", "n" or a parameter),
    two-sided within ``band`` (``bound_only``: a faster decay is no failure)."""

    in_: str
    value: float
    band: float = RATE_DELTA
    bound_only: bool = False
    omega: float | tuple[float, ...] = RATE_OMEGA

    def words(self) -> str:
        return f"{self.value:g} +- {self.band:g}"


@dataclasses.dataclass(frozen=True)
class Bound:
    """Prediction ``metric <= expr`` at every point of the ladder; ``expr`` a sympy expression (or a
    string) in the symbols of :data:`BOUND_SYMBOLS` and the ladder's parameters."""

    expr: Any
    rel: float = 0.0

    def words(self) -> str:
        return f"<= {self.expr}" + (f" (1 + {self.rel:g})" if self.rel else "")


#: The symbols a bound (or a tolerance of :func:`vanishes`) may use besides the ladder's parameters: the
#: problem's declared constants, Delta = f(xbar^0) - f_lower (mean over replicas), G0 = ||grad f(xbar^0)||^2
#: (mean over replicas), the run's K, n, gamma, the dimension d and eps, the unit round-off of float64.
BOUND_SYMBOLS = ("L", "sigma2", "zeta2", "f_lower", "Delta", "G0", "K", "n", "gamma", "d", "eps")


def exponent(
    in_: str,
    value: float,
    band: float = RATE_DELTA,
    bound_only: bool = False,
    omega: float | tuple[float, ...] = RATE_OMEGA,
) -> Exponent:
    """An exponent prediction (see :class:`Exponent`); ``omega``: the exponent of the correction the local
    slopes carry (``x^-omega``: 1/2 for the rates in K of the paper's bounds, 1 for a polynomial
    ``a x^p + b x^(p-1)``), or a tuple of them (``(1, 2)`` for ``a x^p + b x^(p-1) + c x^(p-2)``)."""
    if not isinstance(in_, str) or not in_:
        raise ValueError(f"exponent in_ must be 'K', 'n' or a ladder parameter's name, got {in_!r}")
    omegas = tuple(omega) if isinstance(omega, (tuple, list)) else (omega,)
    if not omegas:
        raise ValueError("exponent omega must be a number > 0 or a non-empty tuple of them, got ()")
    for what, v in (("value", value), ("band", band)) + tuple(("omega", o) for o in omegas):
        if isinstance(v, bool) or not isinstance(v, (int, float)) or not math.isfinite(v):
            raise ValueError(f"exponent {what} must be a finite number, got {v!r}")
    if band <= 0:
        raise ValueError(f"exponent band must be > 0, got {band!r}")
    if min(omegas) <= 0:
        raise ValueError(f"exponent omega must be > 0, got {omega!r}")
    om = float(omegas[0]) if len(omegas) == 1 else tuple(float(o) for o in omegas)
    return Exponent(in_, float(value), float(band), bool(bound_only), om)


def bound(expr: Any, rel: float = 0.0) -> Bound:
    """An upper-bound prediction (see :class:`Bound`); ``rel`` >= 0 is the slack allowed for round-off."""
    import sympy

    try:
        e = sympy.sympify(expr, locals={s: sympy.Symbol(s) for s in BOUND_SYMBOLS})
    except (sympy.SympifyError, TypeError) as exc:
        raise ValueError(f"bound expr must be a sympy expression, got {expr!r} ({exc})") from None
    if isinstance(rel, bool) or not isinstance(rel, (int, float)) or not rel >= 0:
        raise ValueError(f"bound rel must be a number >= 0, got {rel!r}")
    return Bound(e, float(rel))


@dataclasses.dataclass(frozen=True)
class Vanishes:
    """Prediction: the metric goes to zero to round-off as K grows -- at the ladder's largest K it is
    ``<= tol`` (a sympy expression in :data:`BOUND_SYMBOLS`, e.g. ``(n*d*eps)**2 * G0``). ``stall``: a
    rung over which the mean falls by less than this fraction is a floor (see :func:`vanishes`)."""

    tol: Any
    stall: float = 0.1

    def words(self) -> str:
        return f"-> 0: <= {self.tol} at the largest K"


def vanishes(tol: Any, stall: float = 0.1) -> Vanishes:
    """A limit prediction (see :class:`Vanishes`): the metric reaches zero to round-off on the ladder in K.

    Pass iff at the largest K the upper end of the interval of the mean is ``<= tol``; fail iff there
    its lower end is ``> tol`` and the metric has stalled -- the lower end at the largest K is at least
    ``(1 - stall)`` times the upper end at the rung before (a floor above the tolerance); inconclusive
    otherwise (still falling: a longer ladder would settle it). With identical replicas (exact
    gradients) the interval is the value itself: the comparison is exact, as the claim is."""
    e = bound(tol).expr
    if isinstance(stall, bool) or not isinstance(stall, (int, float)) or not 0 < stall < 1:
        raise ValueError(f"vanishes stall must be a number in (0, 1), got {stall!r}")
    return Vanishes(e, float(stall))


@dataclasses.dataclass(frozen=True)
class Ladder:
    """The runs of a declared claim: one axis varies, the rest is fixed.

    ``Ks``: a tuple (the axis) or one K; None takes the configuration's rate ladder (``Ks``,
    ``rate_replicas``), which settling extends as it extends the built-in rate claims'. ``n``: an int
    or a tuple (the axis); None the configuration's n. ``params``: ``{name: value or tuple}``, passed
    to ``topology`` and ``step`` when they are callables (a tuple is the axis). ``topology``: a
    schedule name or ``f(n, seed, **params) -> Topology``; None the configuration's first.
    ``replicas`` (>= 3; None: ``rate_replicas``). ``step``: "sqrt" (gamma = sqrt(n/K), the paper's),
    a number, or ``f(n, K, **params)``. ``setting``: overrides of the configuration for these runs
    (``{"sigma": 0.0}``: exact gradients). A parameter named as a configuration field (``heterogeneity``,
    ``sigma``, ``alpha``, ...) also sets that field at its point, after ``setting`` and a control's
    setting: a ladder over the problem itself. An explicit ladder is the claim's own: settling does not
    extend it.
    """

    Ks: tuple | int | None = None
    n: tuple | int | None = None
    params: dict = dataclasses.field(default_factory=dict)
    topology: Any = None
    replicas: int | None = None
    step: Any = "sqrt"
    setting: dict = dataclasses.field(default_factory=dict)

    def __post_init__(self):
        axes = [nm for nm, v in self._values().items() if isinstance(v, tuple)]
        if self.Ks is None and "K" not in axes:
            axes.insert(0, "K")
        if len(axes) != 1:
            raise ValueError(f"ladder must vary exactly one of Ks, n and params, got {axes or 'none'}")
        for nm, v in self._values().items():
            vals = v if isinstance(v, tuple) else (v,)
            if v is None and nm in ("K", "n"):
                continue
            if nm in ("K", "n") and not all(isinstance(x, int) and not isinstance(x, bool) and x >= 1 for x in vals):
                raise ValueError(f"ladder {nm} must be positive integers, got {v!r}")
            if isinstance(v, tuple) and (len(v) < 2 or list(v) != sorted(set(v))):
                raise ValueError(f"ladder {nm} must be at least 2 increasing values, got {list(v)}")
        if self.replicas is not None and (not isinstance(self.replicas, int) or self.replicas < 3):
            raise ValueError(f"ladder replicas must be an integer >= 3, got {self.replicas!r}")
        if not (self.step == "sqrt" or callable(self.step) or _positive(self.step)):
            raise ValueError(f"ladder step must be 'sqrt', a number > 0 or f(n, K, **params), got {self.step!r}")
        if self.topology is not None and not (callable(self.topology) or isinstance(self.topology, str)):
            raise ValueError(f"ladder topology must be a schedule name or f(n, seed, **params), got {self.topology!r}")
        from .suite.config import SuiteConfig

        fields = {f.name for f in dataclasses.fields(SuiteConfig)}
        bad = sorted(set(self.setting) - fields)
        if bad:
            raise ValueError(f"ladder setting must hold SuiteConfig fields, got {bad[0]!r}")
        both = sorted(set(self.setting) & set(self.params))
        if both:
            raise ValueError(f"ladder {both[0]!r} is both a parameter and a setting: give it once")

    def config_params(self) -> tuple[str, ...]:
        """The parameters that name a configuration field (they set it at their point)."""
        from .suite.config import SuiteConfig

        return tuple(nm for nm in self.params if nm in {f.name for f in dataclasses.fields(SuiteConfig)})

    def _values(self) -> dict[str, Any]:
        return {"K": self.Ks, "n": self.n, **self.params}

    @property
    def axis(self) -> str:
        """The name of what varies: "K", "n" or a parameter's."""
        return next((nm for nm, v in self._values().items() if isinstance(v, tuple)), "K")

    @property
    def follows_config(self) -> bool:
        """The ladder is the configuration's (``Ks`` None): settling may extend it."""
        return self.Ks is None

    def points(self, cfg: SuiteConfig) -> list[dict[str, Any]]:
        """``[{"K", "n", "params", "x"}]`` of every run, in ladder order, under ``cfg``."""
        vals = self._values()
        vals["K"] = tuple(cfg.Ks) if self.Ks is None else self.Ks
        vals["n"] = cfg.n if self.n is None else self.n
        out = []
        for x in vals[self.axis]:
            pt = {k: (x if k == self.axis else v) for k, v in vals.items()}
            out.append({"K": pt.pop("K"), "n": pt.pop("n"), "params": pt, "x": x})
        return out


def _positive(v):
    return not isinstance(v, bool) and isinstance(v, (int, float)) and math.isfinite(v) and v > 0


#: Variant fields a control may set (the suite's departures, :class:`~sgpverify.suite.Variant`).
_VARIANT_FIELDS = {f.name for f in dataclasses.fields(Variant)} - {"name"}


@dataclasses.dataclass(frozen=True)
class Control:
    """The negative control of a declared claim: the same ladder with ``method`` (another method),
    ``setting`` (configuration overrides), ``step`` (another step rule) or any departure of the suite
    (``debias=False``, ``extra_noise=99.0``, ``loss=0.1``, ...). The check must fail on it."""

    name: str
    description: str
    method: Any = None
    setting: dict = dataclasses.field(default_factory=dict)
    step: Any = None
    departure: dict = dataclasses.field(default_factory=dict)

    def __init__(
        self,
        name: str,
        description: str,
        *,
        method: Any = None,
        setting: dict | None = None,
        step: Any = None,
        **departure: Any,
    ) -> None:
        bad = sorted(set(departure) - _VARIANT_FIELDS)
        if bad:
            raise ValueError(
                f"control {name!r}: unknown departure {bad[0]!r} (one of {', '.join(sorted(_VARIANT_FIELDS))})"
            )
        if not isinstance(name, str) or not name:
            raise ValueError(f"control name must be a non-empty string, got {name!r}")
        if step == "constant":  # the suite's departure: the step of K_min at every K
            step, departure["step"] = None, "constant"
        if step is not None and not (step == "sqrt" or callable(step) or _positive(step)):
            raise ValueError(
                f"control {name!r}: step must be 'sqrt', 'constant', a number > 0 or f(n, K, **params), got {step!r}"
            )
        for k, v in dict(name=name, description=description, method=method, setting=dict(setting or {})).items():
            object.__setattr__(self, k, v)
        object.__setattr__(self, "step", step)
        object.__setattr__(self, "departure", dict(departure))
        if method is None and not setting and step is None and not departure:
            raise ValueError(f"control {name!r} must change something: a method, a setting, a step or a departure")


def _label(obj):
    return obj if isinstance(obj, str) else getattr(obj, "name", None) or type(obj).__name__


_METHODS = tuple(METHODS)  # the engine's built-in methods, by name


@dataclasses.dataclass(frozen=True)
class Claim:
    """A user's claim: statement, metric, prediction, ladder, method and negative control.

    ``metric``: a name of :data:`METRICS` or ``callable(trace) -> (R,)`` values (one per replica).
    ``method``: a built-in method's name or a :class:`~sgpverify.engine.methods.Method` object.
    ``criterion``: how the verdict is decided; None writes the test's own rule.
    """

    name: str
    statement: str
    metric: Any
    prediction: Exponent | Bound
    ladder: Ladder
    control: Control
    method: Any = "sgp"
    criterion: str | None = None

    def __post_init__(self):
        if not isinstance(self.name, str) or not self.name or any(c.isspace() for c in self.name):
            raise ValueError(f"claim name must be a non-empty string without spaces, got {self.name!r}")
        if not (callable(self.metric) or self.metric in METRICS):
            raise ValueError(
                f"claim {self.name!r}: metric must be one of {', '.join(METRICS)} or a callable(trace), "
                f"got {self.metric!r}"
            )
        if not isinstance(self.prediction, (Exponent, Bound, Vanishes)):
            raise ValueError(
                f"claim {self.name!r}: prediction must be exponent(...), bound(...) or vanishes(...), "
                f"got {self.prediction!r}"
            )
        if not isinstance(self.ladder, Ladder):
            raise ValueError(f"claim {self.name!r}: ladder must be a Ladder, got {self.ladder!r}")
        if not isinstance(self.control, Control):
            raise ValueError(f"claim {self.name!r}: control must be a Control, got {self.control!r}")
        for m in (self.method, self.control.method):
            if isinstance(m, str) and m not in _METHODS:
                raise ValueError(
                    f"claim {self.name!r}: method must be one of {', '.join(_METHODS)} or a Method, got {m!r}"
                )
        if isinstance(self.prediction, Exponent) and self.prediction.in_ != self.ladder.axis:
            raise ValueError(
                f"claim {self.name!r}: exponent in_ must be the ladder's axis {self.ladder.axis!r}, "
                f"got {self.prediction.in_!r}"
            )
        if isinstance(self.prediction, Vanishes) and self.ladder.axis != "K":
            raise ValueError(
                f"claim {self.name!r}: vanishes(...) is a limit in K: the ladder must vary Ks, "
                f"got axis {self.ladder.axis!r}"
            )
        if self.metric == "tracking_error" and self.method != "push-diging" and isinstance(self.method, str):
            raise ValueError(
                f"claim {self.name!r}: metric 'tracking_error' needs method 'push-diging', got {self.method!r}"
            )

    @property
    def key(self) -> str:
        """The experiment's key in the suite's data."""
        return f"declared:{self.name}"

    # ---------------------------------------------------------------- the suite's records

    def register(self, source: str | None = None) -> None:
        """Register this claim with the suite (its Claim record, Experiment row and, where its ladder is
        the configuration's, the ladder settling extends). ``source``: the claims file, which a fresh
        worker process loads; its digest keys the unit cache."""
        if self.name in BY_NAME and self.key not in EXPERIMENTS:
            raise ValueError(
                f"claim name {self.name!r}{_where(source)} clashes with a check of the suite: choose another name"
            )
        if self.key in EXPERIMENTS:
            raise ValueError(f"claim name {self.name!r}{_where(source)} is declared twice")
        digest = None
        if source is not None:
            with open(source, "rb") as fh:
                digest = hashlib.sha256(fh.read()).hexdigest()
        exp = Experiment(self.key, self.run, cost=(1, 1), source=source, digest=digest)
        record = SuiteClaim(
            self.name,
            self.statement,
            (self.key,),
            self._statistic(),
            self.criterion or self._criterion(),
            make_control(self.control.name, self.control.description, (self.key,), **self.control.departure),
            _Check(self, source),
            bound=isinstance(self.prediction, Bound),
        )
        register(record, exp)
        if self.ladder.follows_config:
            _settle.LADDER_FIELDS[self.key] = ("Ks", "rate_replicas")

    def unregister(self) -> None:
        """Remove this claim from the suite (tests; a second load of the same file)."""
        unregister(self.name, self.key)
        _settle.LADDER_FIELDS.pop(self.key, None)

    def _statistic(self) -> str:
        m = self.metric if isinstance(self.metric, str) else getattr(self.metric, "__name__", "a callable")
        what = f"{m} of {_label(self.method)} per replica"
        if isinstance(self.prediction, Exponent):
            return f"extrapolated exponent in {self.prediction.in_} of the {what} (local slopes over the ladder)"
        if isinstance(self.prediction, Vanishes):
            return f"the {what} at the largest K against the round-off tolerance (t interval over replicas)"
        return f"the {what} against the declared bound at every point of the ladder (t interval over replicas)"

    def _criterion(self) -> str:
        p = self.prediction
        if isinstance(p, Exponent):
            return (
                f"pass iff the interval of the extrapolated exponent lies in {p.words()}; fail iff outside"
                + (" on the slow side (a bound: faster passes)" if p.bound_only else "")
                + "; inconclusive otherwise, or where the replicas agree to round-off "
                "(sgpverify.rates.test_exponent, the suite's level)"
            )
        if isinstance(p, Vanishes):
            return (
                f"pass iff at the largest K the upper end of the interval of the mean is <= {p.tol}; fail iff "
                f"its lower end there is > {p.tol} and it fell by less than {p.stall:g} of the rung before "
                "(a floor); inconclusive otherwise"
            )
        return (
            f"pass iff at every point the upper end of the interval of the mean is {p.words()}; fail iff at "
            "some point its lower end exceeds it; inconclusive otherwise"
        )

    # ---------------------------------------------------------------- the experiment

    def run(
        self,
        cfg: SuiteConfig,
        seed: int,
        variant: Variant = NONE,
        progress: Callable[[str], None] | None = None,
    ) -> dict[str, Any]:
        """Every run of the ladder (under the control where ``variant`` is this claim's control)."""
        ctl = self.control if variant != NONE and variant.name == self.control.name else None
        c = dataclasses.replace(cfg, **self.ladder.setting) if self.ladder.setting else cfg
        if ctl is not None and ctl.setting:
            c = dataclasses.replace(c, **ctl.setting)
        method = ctl.method if ctl is not None and ctl.method is not None else self.method
        step = ctl.step if ctl is not None and ctl.step is not None else self.ladder.step
        make_prob = resolve_problem(c.problem, c)
        R = c.rate_replicas if self.ladder.replicas is None else self.ladder.replicas
        over = self.ladder.config_params()
        runs = []
        for pt in self.ladder.points(c):
            K, n, params = pt["K"], pt["n"], pt["params"]
            if over:  # a ladder over a configuration field: its point's problem
                cp = dataclasses.replace(c, **{nm: params[nm] for nm in over})
                prob = resolve_problem(cp.problem, cp)(n, seed)
            else:
                prob = make_prob(n, seed)
            if variant.extra_noise or variant.shared_noise or variant.bias:
                prob = Perturbed(prob, variant)
            topo = self._topology(c, n, seed, params)
            kw = {}
            if method == "sgp":
                topo = wrap_topology(topo, variant, seed)
                kw = dict(tau=c.tau, delay=c.delay, debias=variant.debias)
            gamma = _step(step, n, K, params)
            if variant.step == "constant":
                gamma = _step(step, n, min(p["K"] for p in self.ladder.points(c)), params)
            tr = simulate_run(c, prob, topo, K, seed, gamma, R, algorithm=method, **kw).check_finite()
            f0 = np.asarray(tr.value, float).reshape(K + 1, -1)[0]
            g0 = np.asarray(tr.grad_norm_sq, float).reshape(K + 1, -1)[0]
            runs.append(
                {
                    "K": K,
                    "n": n,
                    "params": params,
                    "x": pt["x"],
                    "gamma": gamma,
                    "values": measure(self.metric, tr, K),
                    "f0": f0.tolist(),
                    "g0": g0.tolist(),
                    "d": int(prob.dim),
                    "constants": problem_constants(prob),
                }
            )
            if progress:
                progress(f"{self.name} {self.ladder.axis}={pt['x']}")
        return {"claim": self.name, "method": _label(method), "axis": self.ladder.axis, "runs": runs}

    def _topology(self, c, n, seed, params):
        spec = self.ladder.topology
        if spec is None:
            spec = c.topologies[0]
        if callable(spec) and not isinstance(spec, str):
            return spec(n, seed, **params)
        return resolve_topology(spec, c)(n, seed)


def _step(step, n, K, params):
    if step == "sqrt":
        return math.sqrt(n / K)
    if callable(step):
        return float(step(n, K, **params))
    return float(step)


def _where(source):
    return "" if source is None else f" (in {source})"


# ---------------------------------------------------------------- the check


class _Check:
    """The check of a declared claim: ``(cfg, data) -> dict``. Its ``__name__`` leads the report to the
    claims file (the suite's ``code`` column)."""

    def __init__(self, claim: Claim, source: str | None):
        self.claim = claim
        where = source if source else "declared in Python"
        self.__name__ = f"{where} ({claim.name})"

    def __call__(self, cfg: SuiteConfig, data: dict[str, Any]) -> dict[str, Any]:
        got = data[self.claim.key]
        runs = got["runs"]
        p = self.claim.prediction
        if isinstance(p, Exponent):
            return declared_checks.exponent_check(p, runs, got["method"])
        if isinstance(p, Vanishes):
            return declared_checks.vanishes_check(p, runs, got["method"])
        return declared_checks.bound_check(p, runs, got["method"])
