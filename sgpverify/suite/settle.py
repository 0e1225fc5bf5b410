"""Settling: more evidence for the checks that a planned run left inconclusive, within a time budget.

After the planned run of :func:`~sgpverify.suite.run_suite`, :func:`settle` gives every inconclusive
check (and, with controls, every control that was not detected) the evidence its verdict says it
lacks, and only that check:

- a ladder in K that starts where the step-size regime or Theorem 1's threshold begins, where the
  check says ``needs K >= X`` (:data:`REGIME_POINTS` points of the planned ladder, scaled up);
- the planned ladder shifted by two doublings (:data:`SHIFT`), where the local slopes are still moving
  (an extrapolation that the model decides, a pre-asymptotic trend, a fit that does not hold yet);
- twice the replicas and the ladder one doubling further, where an interval is too wide or straddles
  the band's edge (more replicas alone would narrow the interval around a trend the same ladder shows,
  which can still be pre-asymptotic).

Checks that ask for the same evidence share a round. A round that comes only for controls (every
check in it decisive, its control missed) runs the controls alone, without the main runs that only
the control's own evaluation would replace (:func:`~sgpverify.suite.cost.control_mains`); its
checks are not judged again. Conversely, a round whose checks' controls are all detected (or
excused) already runs no control: a detected control is kept, so running it again would cost time
and could only be reported. Rounds run cheapest first, each only where its estimated time
(:mod:`sgpverify.suite.cost`: a short run of the engine on the user's own problem) fits the budget
left; a check gets at most :data:`MAX_ROUNDS` rounds, and a control as many more of its own once its check is
decided (:func:`rounds_used`).

Error control across rounds. Round ``r`` of a check runs on a fresh stream of gradient noise
(``noise_stream``: the problem, the schedules and the seed stay those of the planned run) and its
intervals spend the error rate ``alpha 2^-r`` (:func:`~sgpverify.suite.criteria.spending`). Given
everything before it, a round's data are independent of the earlier rounds', so a round errs with
probability at most ``alpha 2^-r`` whatever made the earlier rounds inconclusive and whichever
evidence they chose; by the union bound all rounds together err with probability below ``alpha``,
however many rounds run, and a check with settling errs at most ``2 alpha`` in all (``alpha``: the
planned run's rate, 0.05 per interval). Only the stopping depends on the data; what each round
brings is fixed by this module's rules before any round is seen. The rounds' units are cached like
the planned run's, so an interrupted settle resumes where it stopped.
"""

from __future__ import annotations

import dataclasses
import math
import re
import time
from typing import TYPE_CHECKING, Any, Callable

from .claims import BY_NAME
from .config import validate_config
from .cost import calibrate, duration, estimate_seconds
from .criteria import IN_AT_N, OUT_AT_N, SHORT_HORIZON, spending
from .experiments.bounds import theorem_run_length
from .records import EXCUSES, excuse

if TYPE_CHECKING:
    from collections.abc import Iterable

    from .config import SuiteConfig
    from .records import Check, SuiteResult

__all__ = [
    "MAX_ROUNDS",
    "SHIFT",
    "REGIME_POINTS",
    "DEFAULT_BUDGET",
    "ROUND_METRIC_SAMPLES",
    "FLOOR_MARGIN",
    "MAX_DOUBLINGS",
    "Evidence",
    "floor_doublings",
    "evidence_for",
    "round_config",
    "settle",
    "round_controls",
    "needs_settling",
    "rounds_used",
]

#: Rounds a check may get, and its control after it is decided (:func:`rounds_used`); round r of a check,
#: whichever it is for, spends alpha 2^-r of the error rate (together below alpha).
MAX_ROUNDS = 3
#: Factor of a ladder shift: two doublings.
SHIFT = 4
#: Factor of the products' horizon (``bound_horizon``) where S2 is infinite: the products do not contract yet.
HORIZON_FACTOR = 4
#: Points of a ladder that starts at a regime (the first points of the planned ladder, scaled up).
REGIME_POINTS = 3
#: Minutes of settling when none are given.
DEFAULT_BUDGET = 20.0

#: A round's runs longer than this many steps evaluate the stationarity at this many sampled steps per
#: replica (``metric_samples``, :func:`~sgpverify.suite.runs.metric_sample`): on a user's problem whose
#: ``full_grad`` costs more than a step, the evaluations at every step are most of a long run's time.
#: No ladder of the planned run (quick preset) is longer, so the planned runs evaluate every step.
ROUND_METRIC_SAMPLES = 8192

#: Each experiment's K ladder and replicas (the fields a round changes); the others have none.
LADDER_FIELDS = {
    "rates": ("Ks", "rate_replicas"),
    "speedup": ("speedup_Ks", "speedup_replicas"),
    "descent": ("descent_Ks", "replicas"),
    "delays": ("delay_Ks", "delay_replicas"),
    "baselines": ("baseline_Ks", "replicas"),
    "topologies": ("topology_Ks", "topology_replicas"),
    "scaling": ("scaling_Ks", "scaling_replicas"),
    "complexity": ("complexity_budgets", "complexity_replicas"),
    "theorem": ("theorem_K_cap", "theorem_replicas"),
}

#: How a round's verdict tags the detail it replaces (``" [settled in round 2 (...)]"``, at the end).
SETTLED_TAG = " [settled in round "
_NEEDS = re.compile(r"needs K >= ([0-9.]+(?:e[+-]?[0-9]+)?)")
_THRESHOLD = re.compile(r"threshold \(known part\) ([0-9.]+(?:e[+-]?[0-9]+)?)")
_WIDE = ("more replicas", "straddles")
#: The sizes n outside the step-size regime and inside it, in a claim in n's detail (:func:`_n_shift`), and
#: the size n of the run the regime's ``needs K >= X`` is for.
_OUT_N = re.compile(re.escape(OUT_AT_N) + r"([0-9, ]+?)" + re.escape(IN_AT_N) + r"([0-9, ]+[0-9])")
_AT_N = re.compile(r"at K = [0-9]+ \(n = ([0-9]+)\)")
#: The n ladder of each experiment of the claims in n.
N_LADDERS = {"speedup": "speedup_ns", "complexity": "complexity_ns"}


@dataclasses.dataclass(frozen=True)
class Evidence:
    """What one round brings to a check: ``overrides`` of the configuration (its ladders or
    replicas), in words (``why``), or, where nothing more to run settles the check, no overrides
    and the reason."""

    overrides: tuple[tuple[str, Any], ...]
    why: str
    #: Steps of the round's Theorem 1 runs, one per schedule that runs one (its threshold within the
    #: cap; :func:`~sgpverify.suite.experiments.bounds.theorem_run_length`, not ``theorem_K_cap``, which
    #: keeps a margin above them). Estimates only (:func:`~sgpverify.suite.cost.estimate_seconds`).
    steps: tuple[int, ...] | None = None

    @property
    def runs(self) -> bool:
        return bool(self.overrides)

    def lines(self) -> list[str]:
        """The overrides as lines of a ``--config`` TOML file."""
        return [f"{k} = {list(v) if isinstance(v, tuple) else v}" for k, v in self.overrides]


#: A check that reads another ladder of its experiment than the experiment's own (``delay-rate``: the
#: per-tau exponent runs on ``Ks``, the delay experiment's ratio ladder is ``delay_Ks``).
CHECK_LADDERS = {"delay-rate": {"delays": ("Ks", "delay_replicas")}}


def _ladders(name: str) -> list[tuple[str, str]]:
    """The ladder fields (K ladder, replicas) of check ``name``'s experiments, in order."""
    own = CHECK_LADDERS.get(name, {})
    return [own.get(k, LADDER_FIELDS[k]) for k in BY_NAME[name].experiments if k in LADDER_FIELDS]


def _shortest_run(field: str, ladder: tuple[int, ...], cfg: SuiteConfig, n: int | None = None) -> float:
    """The fewest iterations K of a run on ``ladder``: its smallest entry, except for the iteration
    complexity's budgets T = n K, where a size n runs T / n iterations: the n whose run the regime
    named (``n``), else the largest n (the fewest iterations)."""
    if field == "complexity_budgets":
        return min(ladder) / (n if n in cfg.complexity_ns else max(cfg.complexity_ns))
    return float(min(ladder))


def _n_shift(name: str, text: str, cfg: SuiteConfig) -> Evidence | None:
    """The round of a claim in n whose runs leave the step-size regime at the smallest sizes n of its n
    ladder only, with at least two sizes inside (:func:`~sgpverify.suite.claims.common.regime_by_n`'s
    words): the n ladder moves up past them (those inside, then doublings of the largest, as many as
    left), its K ladder kept. A longer K would not bring such an n in where its weights dip in stretches
    (sparse random graphs at small n: the longest stretch grows with the run), while the larger n are in
    the regime already; the claim is the same at every n. None where the rule does not apply."""
    fields = [N_LADDERS[k] for k in BY_NAME[name].experiments if k in N_LADDERS]
    m = _OUT_N.search(text)
    if not fields or m is None:
        return None
    out = tuple(int(v) for v in m.group(1).split(","))
    inside = tuple(int(v) for v in m.group(2).split(","))
    over, k = [], len(out)
    for field in fields:
        ns = tuple(sorted(int(v) for v in getattr(cfg, field)))
        if ns[:k] != out or ns[k:] != inside or len(inside) < 2:
            return None
        over.append((field, inside + tuple(ns[-1] * 2**j for j in range(1, k + 1))))
    why = (  # the round's line adds the ladder itself
        f"the step-size regime fails at its smallest n only (n = {', '.join(map(str, out))}; inside at n = "
        f"{', '.join(map(str, inside))}): the n ladder moves up past them, its K kept"
    )
    return Evidence(tuple(over), why)


def _scaled(ladder: tuple[int, ...], factor: int, points: int | None = None) -> tuple[int, ...]:
    out = tuple(int(k) * factor for k in ladder)
    return out if points is None else out[: max(2, points)]


def evidence_for(check: Check, cfg: SuiteConfig) -> Evidence:
    """The evidence the next round of ``check`` (inconclusive, or a control not detected) runs on,
    by the rules of this module: fixed before any round is seen, chosen by what the verdict says
    it lacks."""
    # what the check's latest run says it lacks: the tag a round appended (its own reasons, such as the regime
    # it went to) is history, and read as evidence it would send every later round where the first one went
    text = f"{check.measured}; {check.detail.split(SETTLED_TAG)[0]}"
    # a round for the control of a decisive check: what the control's verdict says it lacks (the check's
    # own text, from the run that settled it, would send the control where the check needed to go)
    for_control = check.control is not None and check.verdict != "inconclusive" and not check.control.get("detected")
    if for_control:
        text = f"{check.control.get('measured', '')}; {check.control.get('detail', '')}"
    ladders = _ladders(check.name)
    if check.verdict == "not applicable" or "not applicable" in check.measured:
        return Evidence((), f"not applicable: {check.detail or check.measured}")
    refuted = (getattr(check, "extra", None) or {}).get("refuted")  # what the problem's own gradients refute
    if refuted:
        return Evidence((), f"no round changes it: the problem refutes what the check relies on ({check.measured})")
    if not ladders:
        return Evidence((), "its experiments have no ladder to extend (the verdict is exact or depends on sizes)")
    if SHORT_HORIZON in text:  # S2 infinite: the products' horizon, not K, is what the bound lacks
        h = HORIZON_FACTOR * cfg.bound_horizon
        return Evidence(
            (("bound_horizon", h),), f"the products {SHORT_HORIZON}: the horizon {HORIZON_FACTOR} times longer"
        )
    need = _NEEDS.search(text)
    theorem = any(field == "theorem_K_cap" for field, _ in ladders)
    if theorem and need:  # Theorem 1's threshold: run there
        K = float(need.group(1))
        cap = 2 ** math.ceil(math.log2(max(K, 2.0)))
        if cap <= cfg.theorem_K_cap:
            return Evidence((), f"Theorem 1's threshold K >= {K:.2g} is already within theorem_K_cap")
        return Evidence(
            (("theorem_K_cap", cap),),
            f"Theorem 1's threshold needs K >= {K:.2g}: run up to {cap}",
            _theorem_lengths(dataclasses.replace(cfg, theorem_K_cap=cap), text, K),
        )
    if theorem:
        return Evidence((), "Theorem 1's run is already at its threshold; more of it does not change the bound")
    moved = _n_shift(check.name, text, cfg) if need else None
    if moved is not None:
        return moved
    over = []
    if need:
        # the ladder's first point goes to the power of two at or above K (its first points, scaled up)
        K = float(need.group(1))
        at_n = _AT_N.search(text)
        at_n = int(at_n.group(1)) if at_n else None
        for field, _ in ladders:
            ladder = getattr(cfg, field)
            factor = 2 ** max(1, math.ceil(math.log2(max(K / _shortest_run(field, ladder, cfg, at_n), 1.0))))
            over.append((field, _scaled(ladder, factor, REGIME_POINTS)))
        why = f"the step-size regime needs K >= {K:.2g}: the ladder starts there ({REGIME_POINTS} points)"
    elif any(w in text for w in _WIDE):
        # more replicas alone would narrow the interval around what the same ladder shows: where that is
        # still a pre-asymptotic trend, a decisive verdict on it would be a false one (seen on short
        # ladders of the ratio claims); so the ladder goes one doubling further too
        for field, reps in ladders:
            over.append((field, _scaled(getattr(cfg, field), 2)))
            over.append((reps, 2 * getattr(cfg, reps)))
        why = "an interval too wide for the band: twice the replicas, and the ladder one doubling further"
    elif for_control:
        # a departure can act relative to the ladder's start (the constant step's gamma = sqrt(n/K_min)): a
        # shifted ladder reruns the same picture, so the ladder keeps its start and gets two doublings more, or
        # as many as its noise floor needs where its decay is faster than predicted (:func:`floor_doublings`)
        floor = floor_doublings(text, tuple(getattr(cfg, ladders[0][0]))) if len(ladders) == 1 else None
        doublings = int(math.log2(SHIFT)) if floor is None else floor[0]
        for field, _ in ladders:
            ladder = tuple(getattr(cfg, field))
            over.append((field, ladder + tuple(int(ladder[-1]) * 2**j for j in range(1, 1 + doublings))))
        why = "the control's departure is still emerging at the end of the ladder: " + (
            "two doublings more, its start kept" if floor is None else f"{floor[1]}, its start kept"
        )
        tau = _nearest_tau(text, floor, cfg) if "delays" in BY_NAME[check.name].experiments else None
        if tau is not None:
            over.append(("taus", (0, tau)))
            why += f"; on tau = {tau} alone (with its tau = 0 reference), the delay whose floor is nearest"
    else:
        for field, _ in ladders:
            over.append((field, _scaled(getattr(cfg, field), SHIFT)))
        why = "the local slopes are still moving at the end of the ladder: the ladder two doublings further"
    return Evidence(tuple(over), why)


#: The local slopes a rate check's detail lists (one list per schedule or delay), and its prediction.
_SLOPES = re.compile(r"local slopes (-?[0-9.]+(?:, -?[0-9.]+)*)")
_BAND = re.compile(r"vs (-?[0-9.]+) \+- ([0-9.]+)")
#: The local slope a control's ladder aims at, in deltas above the prediction (its slow side).
FLOOR_MARGIN = 3
#: The most doublings a control's round adds (the next round predicts again from its own slopes).
MAX_DOUBLINGS = 8


def floor_doublings(text: str, ladder: tuple[int, ...]) -> tuple[int, str, int] | None:
    """Doublings of ``ladder`` that a control's round adds where its rate check reads a decay faster
    than predicted (``text``, the control's detail: "local slopes ..." on ``ladder``, "vs p +- delta"),
    with the reason and the index of the list of slopes it follows (of those in ``text``); None where
    the text does not show that (the round then adds :data:`SHIFT`).

    A departure that leaves a noise floor B (a constant step: the stationarity average A/K + B) decays
    at -1 while A/K dominates and turns to 0 after: its local slope at K is -1/(1 + qK), q = B/A. The
    last local slope s at the ladder's last midpoint x gives q = (-1/s - 1)/x; the slope reaches the
    slow side of the band, p + :data:`FLOOR_MARGIN` delta, where the midpoint is at K* = x q*/q (q* from
    that slope). The ladder ends at the first doubling whose last midpoint passes K*: at least
    log2(:data:`SHIFT`) doublings (today's rule), at most :data:`MAX_DOUBLINGS`. With several lists
    (schedules, delays), the nearest K*: one that fails detects the departure. The model chooses the
    evidence only; the verdict is the check's on the data."""
    band = _BAND.search(text)
    lists = [[float(v) for v in m.split(", ")] for m in _SLOPES.findall(text)]
    if band is None or not lists or len(ladder) < 2:
        return None
    p, delta = float(band.group(1)), float(band.group(2))
    target = p + FLOOR_MARGIN * delta
    x = math.sqrt(float(ladder[-1]) * float(ladder[-2]))
    if not -1.0 < target < 0.0:
        return None
    found = [
        (x * (-1.0 / target - 1.0) / (-1.0 / sl[-1] - 1.0), sl[-1], i)
        for i, sl in enumerate(lists)
        if len(sl) == len(ladder) - 1 and -1.0 < sl[-1] < p - delta  # faster than the band, short of -1
    ]
    if not found:
        return None
    star, s, index = min(found)
    # the last midpoint after j doublings is x 2^j
    j = min(MAX_DOUBLINGS, max(int(math.log2(SHIFT)), math.ceil(math.log2(max(star / x, 1.0)))))
    return (
        j,
        f"its decay, faster than predicted (last local slope {s:.3f}), ends at its noise floor, which A/K + B "
        f"through that slope puts at K ~ {star:.2g} (local slope {target:g}): {j} doublings more",
        index,
    )


#: Where a rate check's detail names the delay of a list of local slopes ("tau=2 (...): ...").
_TAU = re.compile(r"tau=([0-9]+) ")


def _nearest_tau(text: str, floor: tuple[int, str, int] | None, cfg: SuiteConfig) -> int | None:
    """The delay of the list of local slopes whose floor :func:`floor_doublings` found nearest, where
    ``text`` names one delay per list (the last ``tau=T`` before it) and ``cfg.taus`` holds more
    delays than it; else None. A round for the control of a per-delay rate check runs that delay
    alone: one delay whose rate fails detects the departure, and the others' runs would only be
    reported (about three times the runs on the quick preset's delays 1, 2, 4)."""
    if floor is None:
        return None
    taus, at = [], 0
    for m in _SLOPES.finditer(text):
        named = _TAU.findall(text, at, m.start())
        taus.append(int(named[-1]) if named else None)
        at = m.end()
    i = floor[2]
    tau = taus[i] if i < len(taus) else None
    if tau is None or tau == 0 or tau not in cfg.taus or len(cfg.taus) <= 2:
        return None
    return tau


def _theorem_lengths(cfg: SuiteConfig, text: str, K: float) -> tuple[int, ...]:
    """The steps of each Theorem 1 run a round under ``cfg`` takes (:attr:`Evidence.steps`): one run per
    schedule whose threshold in ``text`` (three significant digits: within 0.5%) is within
    ``theorem_K_cap``, none beyond it; where the text names none, ``K`` (within 5%) on every schedule."""
    cap = cfg.theorem_K_cap
    per = [float(t) for t in _THRESHOLD.findall(text)]
    runs = tuple(theorem_run_length(cfg, min(1.005 * t, cap)) for t in per if 0.995 * t <= cap)
    if runs:
        return runs
    return (theorem_run_length(cfg, 1.05 * K) or cfg.theorem_K_cap,) * len(cfg.topologies)


def round_config(base: SuiteConfig, overrides: Iterable[tuple[str, Any]]) -> SuiteConfig:
    """The configuration of a settling round: ``base`` with the round's ``overrides``, its metrics
    sampled (``metric_samples`` = :data:`ROUND_METRIC_SAMPLES`) where ``base`` evaluates every step."""
    sub = dataclasses.replace(base, **dict(overrides))
    return sub if sub.metric_samples else dataclasses.replace(sub, metric_samples=ROUND_METRIC_SAMPLES)


def needs_settling(check: Check) -> bool:
    """Whether a round could change ``check``: it is inconclusive, or its control (of an applicable
    check) was not detected."""
    return check.verdict == "inconclusive" or (check.verdict != "not applicable" and _control_open(check))


def _control_open(check: Check) -> bool:
    """Whether ``check`` has a control that a round could still detect: run, neither detected nor
    excused (undetectable by its bound, no departure here); a control not judged because its check is
    inconclusive is open (a round that decides the check judges it)."""
    ctl = check.control
    return ctl is not None and not ctl.get("detected") and excuse(ctl) in (None, "unjudged")


def round_controls(checks: Iterable[Check], controls: bool) -> tuple[bool, bool]:
    """``(with_controls, controls_only)`` of a round for ``checks`` in a run with or without
    ``controls``: the controls run only where one of them is still open (a detected or excused
    control is kept, so a rerun could only be reported), and alone (the checks' own runs not
    repeated) where every check in the round was judged already."""
    checks = list(checks)
    with_ctl = controls and any(_control_open(c) for c in checks)
    return with_ctl, with_ctl and all(c.verdict != "inconclusive" for c in checks)


def settle(
    result: SuiteResult,
    run: Callable[..., SuiteResult],
    *,
    budget: float = DEFAULT_BUDGET,
    per_step: tuple[float, float] | None = None,
    progress: Callable[[str], None] | None = None,
    workers: int = 1,
    clock: Callable[[], float] = time.monotonic,
) -> tuple[tuple[Check, ...], dict[str, Any]]:
    """The checks of ``result`` after settling, and the record of the rounds.

    ``run(cfg, only=names, controls=...)`` runs a round (a :func:`~sgpverify.suite.run_suite`
    with the planned run's seed, executor and cache); ``budget`` is in minutes of wall time;
    ``per_step`` the calibration (:func:`~sgpverify.suite.cost.calibrate`, measured here when None and a round is due).
    Returns ``(checks, record)``: ``record["checks"][name]`` holds the verdict before and after and
    the rounds, ``record["left"]`` why each check still inconclusive stayed so.
    """
    t0 = clock()
    deadline = t0 + 60.0 * budget
    cfg = result.config
    checks = {c.name: c for c in result.checks}
    before = {c.name: c.verdict for c in result.checks}
    rounds: dict[str, list[dict]] = {}
    left: dict[str, str] = {}
    current = {c.name: cfg for c in result.checks}  # each check's configuration of its last round
    judged = dict(current)  # ... and of the last that ran its control (a round may leave it out: _fits)
    pending = [c.name for c in result.checks if needs_settling(c)]
    stream, slow = 0, 1.0
    nxt: dict[str, dict] = {}  # the next round of each check the budget stopped
    if pending and per_step is None:
        try:
            per_step = calibrate(cfg, result.seed)
        except Exception as exc:  # a setting whose short run fails: nothing can be estimated
            why = f"no round run: the calibration run failed ({type(exc).__name__}: {exc})"
            left.update(dict.fromkeys(pending, why))
            pending = []
    while pending:
        plans: dict[tuple, list[str]] = {}
        for name in pending:
            r = len(rounds.get(name, [])) + 1  # the round's error spending: every round of the check counts
            base = judged[name] if checks[name].verdict != "inconclusive" else current[name]
            ev = evidence_for(checks[name], base)
            if not ev.runs:
                left[name] = ev.why
                continue
            if rounds_used(checks[name], rounds.get(name, [])) >= MAX_ROUNDS:
                left[name] = rounds_spent(checks[name], ev)
                continue
            plans.setdefault((ev.overrides, ev.why, r, base, ev.steps), []).append(name)
        if not plans:
            break
        costed = []
        for (over, why, r, base, steps), names in plans.items():
            sub = round_config(base, over)
            try:  # a round is a configuration like any other: its longest run must fit in memory
                validate_config(sub)
            except (TypeError, ValueError) as exc:
                left.update(dict.fromkeys(names, f"the next round ({why}) cannot run here: {exc}"))
                continue
            with_ctl, only_ctl = round_controls((checks[nm] for nm in names), result.controls)
            secs = estimate_seconds(
                sub, names, per_step, with_ctl, workers, controls_only=only_ctl, theorem_steps=steps
            )
            if with_ctl and not only_ctl and not _fits(clock, slow, secs, deadline):
                # the checks first: without the controls where only that fits (they stay open)
                bare = estimate_seconds(sub, names, per_step, False, workers, theorem_steps=steps)
                if _fits(clock, slow, bare, deadline):
                    secs, with_ctl, why = bare, False, f"{why} ({WITHOUT_CONTROLS})"
            costed.append((secs, over, why, r, names, sub, (with_ctl, only_ctl)))
        if not costed:
            break
        costed.sort(key=lambda e: (e[0], e[4]))
        secs, over, why, r, names, sub, (with_ctl, only_ctl) = costed[0]
        if not _fits(clock, slow, secs, deadline):  # the cheapest round does not fit: none does
            for e in costed:
                for nm in e[4]:
                    nxt[nm] = {
                        "why": e[2],
                        "config": Evidence(e[1], e[2]).lines(),
                        "seconds": slow * e[0],
                        "rounds_left": MAX_ROUNDS - rounds_used(checks[nm], rounds.get(nm, [])),
                    }
                    left[nm] = _beyond(e[2], slow * e[0], max(0.0, deadline - clock()), cfg)
            break
        stream += 1
        sub = dataclasses.replace(sub, noise_stream=stream)
        if progress:
            used = (clock() - t0) / 60.0
            progress(
                f"settle round {stream}, {used:.1f} of {budget:g} min used: {', '.join(names)} (their round {r}): "
                f"{why}; about {duration(slow * secs)}"
            )
        start = clock()
        with spending(2.0**-r):
            got = run(sub, only=names, controls=with_ctl, **({"controls_only": True} if only_ctl else {}))
        took = clock() - start
        # the machine as it is now (other work, threads): estimates are scaled by the slowest round so far
        slow = max(slow, took / max(secs, 1e-9))
        for c in got.checks:
            old = checks[c.name]
            kept = result.controls and not _control_open(old)  # judged before: a rerun would not count
            new = _merge(old, c, r, stream, why, over)
            rounds.setdefault(c.name, []).append(
                dict(
                    round=r,
                    for_control=old.verdict != "inconclusive",  # the check decided before: a round of its control's
                    noise_stream=stream,
                    why=why,
                    overrides={k: list(v) if isinstance(v, tuple) else v for k, v in over},
                    verdict=None if only_ctl else c.verdict,  # None: the check was not judged again
                    control=None if c.control is None or kept else c.control.get("verdict"),
                    control_kept=kept,
                    measured=c.measured,
                    seconds=took,
                    estimated_seconds=secs,
                    slowdown=slow,
                )
            )
            checks[c.name] = new
            current[c.name] = dataclasses.replace(sub, noise_stream=0)
            if with_ctl:  # its control judged on this round's configuration
                judged[c.name] = current[c.name]
        pending = [nm for nm in pending if nm not in left and needs_settling(checks[nm])]
    record = {
        "budget_minutes": budget,
        "seconds": clock() - t0,
        "per_step": list(per_step) if per_step else None,
        "slowdown": slow,
        "checks": {
            name: {"before": before[name], "after": checks[name].verdict, "rounds": rounds.get(name, [])}
            for name in before
            if name in rounds or name in left
        },
        "left": left,
        "next": nxt,
    }
    return tuple(checks[c.name] for c in result.checks), record


def rounds_used(check: Check, done: list[dict]) -> int:
    """The rounds of ``check`` that count against :data:`MAX_ROUNDS` (``done``: its rounds so far, as
    :func:`settle` records them): while the check is inconclusive, all of them; once it is decided, those
    of its control alone, the rounds that ran after the check was decided. A control that the check's
    last round judged and missed then gets rounds of its own, as one whose check the planned run decided
    does (a check decided in its third round left its control no round at all before). Error spending
    goes on across both: round ``r`` of a check, whatever it is for, spends ``alpha 2^-r``."""
    if check.verdict == "inconclusive":
        return len(done)
    return sum(1 for d in done if d.get("for_control"))


def rounds_spent(check: Check, ev: Evidence) -> str:
    """Why ``check`` (or its control) stays open after its :data:`MAX_ROUNDS` rounds (:func:`rounds_used`),
    with what its last round read and the evidence a further run would bring (``ev``, by the same rules),
    as the lines of a ``--config`` file: a run of the check on that configuration is that evidence, judged
    at the planned run's error rate."""
    if check.verdict != "inconclusive" and check.control is not None:
        what = f"its control still inconclusive after {MAX_ROUNDS} rounds of its own (the most a control gets once "
        what += "its check is decided)"
        last = check.control.get("measured", "")
    else:
        what, last = f"still inconclusive after {MAX_ROUNDS} rounds (the most a check gets)", check.measured
    return (
        f"{what}; its last round read {last!r}; a further run: {ev.why}, with these lines in a --config file: "
        f"{'; '.join(ev.lines())}"
    )


#: What a round's reason says where it runs without the controls it would have run (:func:`settle`).
WITHOUT_CONTROLS = "its controls left out: with them the round would not fit the budget left"
#: The margin on a round's estimate (and the machine's slowdown so far) within which it must fit.
MARGIN = 1.25


def _beyond(why: str, secs: float, left: float, cfg: Any) -> str:
    """Why a round estimated at ``secs`` (the slowdown included) was not run with ``left`` seconds of
    the budget to go; where the estimate alone would fit, the margin (:data:`MARGIN`) is what it lacks."""
    need = f"the next round ({why}) needs about {duration(secs)} at n = {cfg.n}, d = {cfg.d} here"
    if secs <= left:
        need += f", {duration(MARGIN * secs)} with the margin of {MARGIN:g} on estimates"
    return f"{need}, beyond the budget left ({duration(left)})"


def _fits(clock: Callable[[], float], slow: float, secs: float, deadline: float) -> bool:
    """Whether a round estimated at ``secs`` fits before ``deadline`` (:data:`MARGIN`, slowdown ``slow``)."""
    return clock() + MARGIN * slow * secs <= deadline


def _merge(old: Check, new: Check, r: int, stream: int, why: str, over) -> Check:
    """``old`` after a round that gave ``new``: the round's verdict where the planned one was
    inconclusive, the round's control where the planned control was not detected (undetectable
    under a loose bound only where the round judged the check first); a decisive planned verdict
    and a detected planned control are kept."""
    settled = f"{SETTLED_TAG[2:]}{r} (noise stream {stream}; {why}; {'; '.join(f'{k} = {v}' for k, v in over)})"
    out = old
    if old.verdict == "inconclusive":
        out = dataclasses.replace(
            old,
            verdict=new.verdict,
            measured=new.measured,
            predicted=new.predicted,
            detail=f"{new.detail} [{settled}]",
            extra=new.extra,
        )
    if old.control is not None and not old.control.get("detected") and new.control is not None:
        ctl = dict(new.control)
        if old.verdict != "inconclusive":
            # the planned run judged the check and missed its control: a round detects it or not, and
            # never excuses it as undetectable (only a round that judges the check first may)
            for key in EXCUSES:
                ctl.pop(key, None)
        out = dataclasses.replace(out, control=ctl)
    if out.verdict != "inconclusive" and out.control is not None and "unjudged" in out.control:
        # the round decided the check without judging its control (it ran without the controls): the
        # control, still undecided, is a miss until a round judges it
        out = dataclasses.replace(out, control={k: v for k, v in out.control.items() if k != "unjudged"})
    return out
