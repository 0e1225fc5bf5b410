"""The suite's records: claims with their controls, checks, results, exit status."""

from __future__ import annotations

import dataclasses
import inspect
import os
import re
from typing import Any, Callable

from ..version import __version__
from .config import SuiteConfig
from .criteria import LOOSE_BOUND
from .departures import Variant

__all__ = [
    "Claim",
    "Control",
    "Check",
    "SuiteResult",
    "exit_status",
    "NotApplicable",
    "CheckError",
    "make_control",
    "control_record",
    "undetectable",
    "control_ok",
    "excuse",
    "EXCUSES",
    "UNJUDGED",
    "code_of",
    "CHECK_VERDICTS",
]

#: The verdicts of a check. ``not applicable``: no amount of compute settles the check on this setting
#: -- an optional dependency is missing (the worst-case check without the pep extra), the problem lacks
#: what the experiment needs (``local_grad``), or a claim in n meets a problem that changes with n; the
#: verdict says why and what would make it apply. It never changes the exit status, and its control is
#: not counted.
CHECK_VERDICTS = ("pass", "fail", "inconclusive", "not applicable")


@dataclasses.dataclass(frozen=True)
class Control:
    """The negative control of a check: a departure on which the check must fail."""

    name: str
    description: str
    variant: Variant
    experiments: tuple  # experiment keys re-run under the variant


def make_control(name: str, desc: str, exps: tuple[str, ...], **variant: Any) -> Control:
    return Control(name, desc, Variant(name=name, **variant), exps)


@dataclasses.dataclass(frozen=True)
class Claim:
    """One checkable statement: the paper's claim, its experiment, criterion and control."""

    name: str
    statement: str
    experiments: tuple
    statistic: str
    criterion: str
    control: Control
    # function (cfg, data) -> dict(verdict, measured, predicted, detail, extra)
    check: Callable[[SuiteConfig, dict[str, Any]], dict[str, Any]]
    #: The declared constants of the problem the check relies on ("L", "sigma2", "zeta2", "f_lower"), and
    #: "bias" where its claim assumes unbiased stochastic gradients: where the problem itself refutes
    #: one (declared-constants), the check cannot pass (it is inconclusive, and no round settles it).
    uses: tuple = ()
    #: Whether the check holds a measurement to an upper bound (pass iff measured/bound <= 1), with the
    #: largest measured/bound ratio as its ``extra["slack"]``: its control may be undetectable where the
    #: bound is loose (:func:`undetectable`).
    bound: bool = False


#: What a check shows in place of a NaN (a value that could not be measured).
NOT_MEASURED = "unmeasured"
_NAN_WORD = re.compile(r"(?<![A-Za-z_])[-+]?nan(?![A-Za-z_])", re.IGNORECASE)


@dataclasses.dataclass(frozen=True)
class Check:
    """One verdict (:data:`CHECK_VERDICTS`): ``pass``, ``fail``, ``inconclusive`` or ``not applicable``,
    with what was measured."""

    name: str
    verdict: str
    measured: str
    predicted: str
    criterion: str
    detail: str
    code: str
    extra: dict = dataclasses.field(default_factory=dict)
    control: dict | None = None

    def __post_init__(self):
        # a NaN is no measurement: say so in words wherever a claim formatted one
        for key in ("measured", "predicted"):
            object.__setattr__(self, key, _NAN_WORD.sub(NOT_MEASURED, getattr(self, key)))

    @property
    def passed(self) -> bool:
        """Pass, or not applicable (a missing optional dependency fails nothing)."""
        return self.verdict in ("pass", "not applicable")

    def to_dict(self) -> dict[str, Any]:
        d = {k: getattr(self, k) for k in ("name", "verdict", "measured", "predicted", "criterion", "detail", "code")}
        d.update(self.extra)
        if self.control is not None:
            d["control"] = self.control
        return d


def undetectable(claim: Claim, check: Check, control: dict[str, Any]) -> str | None:
    """Why the control of a bound check cannot be detected on this setting, or None.

    A bound check (``claim.bound``) fails only where a departure lifts its measurement past the bound.
    Where the check and its control both pass, two settings hide the departure by construction, and a
    longer run gives the check no power against it:

    - a loose bound: the honest runs sit below :data:`~sgpverify.suite.criteria.LOOSE_BOUND` of the
      bound, so the departure would have to lift the measurement more than ``1 / slack``-fold;
    - a departure that does not lift it: the control's measured/bound ratio is no larger than the honest
      runs' (a gradient bias that drives the iterates where the gradients vanish lowers the measured
      stationarity). The bound holds for the honest runs, so it holds for these too: no true bound on
      this quantity can detect the departure here.

    Fixed before any run of a user's setting; on the defaults every bound control lifts its measurement
    past its bound.
    """
    if not claim.bound or check.verdict != "pass" or control.get("verdict") != "pass":
        return None
    s, c = check.extra.get("slack"), control.get("extra", {}).get("slack")
    if not all(isinstance(v, (int, float)) and 0 < v < float("inf") for v in (s, c)):
        return None
    if s < LOOSE_BOUND:
        return (
            f"the bound is {1 / s:.3g} times above the measurement here (measured/bound {s:.3g}); the departure "
            f"lifted it to {c:.3g} of the bound, and only one that lifts it {1 / s:.3g}-fold could cross it"
        )
    if c <= s:
        return (
            f"the departure does not lift the measurement here: measured/bound {c:.3g} under it against {s:.3g} "
            "without it; the bound holds for the honest runs, so no bound on this quantity that holds can detect it"
        )
    return None


def control_record(claim: Claim, check: Check, control: dict[str, Any], vacuous: str | None = None) -> dict[str, Any]:
    """A check's control entry from its result dict on the control's data: ``detected`` iff the check
    fails there; ``detail`` where it was not detected (what a settling round for it reads); for a
    bound check, ``slack``: the control's largest measured/bound ratio; ``undetectable`` (the reason,
    only where it applies: :func:`undetectable`); ``vacuous``: why the departure departs from nothing
    on this setting (:func:`sgpverify.suite.departures.vacuous`), where it does not detect it."""
    rec = {
        "name": claim.control.name,
        "description": claim.control.description,
        "verdict": control["verdict"],
        "detected": control["verdict"] == "fail",
        "measured": control["measured"],
    }
    if not rec["detected"]:
        rec["detail"] = control.get("detail", "")  # what a settling round for the control reads
    if claim.bound and "slack" in control.get("extra", {}):
        rec["slack"] = control["extra"]["slack"]  # the control's largest measured/bound ratio
    if vacuous is not None and not rec["detected"]:
        rec["vacuous"] = vacuous  # the more specific excuse: the departure departs from nothing at all
    else:
        why = undetectable(claim, check, control)
        if why is not None:
            rec["undetectable"] = why
        elif check.verdict == "inconclusive" and control["verdict"] == "inconclusive":
            rec["unjudged"] = UNJUDGED  # neither verdict decided: the control cannot show the check's power
    return rec


@dataclasses.dataclass(frozen=True)
class SuiteResult:
    """Checks, raw data of every experiment, configuration, seed and timing.

    ``foreign``: ``{unit name: numeric fingerprint}`` of the units that dask workers on
    another numeric platform computed (see :class:`sgpverify.errors.PlatformMismatchWarning`);
    empty for a run on this platform alone. ``settle``: the record of ``verify --settle``'s rounds
    (:func:`sgpverify.suite.settle.settle`: each settled check's verdict before and after, its
    rounds, and why the rest stayed inconclusive), None without settling.
    """

    config: SuiteConfig
    seed: int
    checks: tuple
    data: dict
    seconds: float
    controls: bool = False
    foreign: dict = dataclasses.field(default_factory=dict)
    settle: dict | None = None

    @property
    def passed(self) -> bool:
        return all(c.passed for c in self.checks) and self.controls_detected

    @property
    def controls_detected(self) -> bool:
        return all(control_ok(c) for c in self.checks)

    @property
    def status(self) -> int:
        """Exit status of ``sgpverify verify``: see :func:`exit_status`."""
        return exit_status(self)

    def to_dict(self) -> dict[str, Any]:
        return {
            "status": {0: "pass", 1: "fail", 4: "inconclusive"}[self.status],
            "checks": [c.to_dict() for c in self.checks],
            "config": self.config.to_dict(),
            "seed": self.seed,
            "seconds": self.seconds,
            "controls": self.controls,
            "version": __version__,
            **({"settle": self.settle} if self.settle is not None else {}),
        }


#: The ways a control that was not detected can be excused on a setting: the key its entry carries
#: (with the reason) -> (its label in tables, its words in the summary line).
EXCUSES = {
    "undetectable": ("undetectable here", "undetectable by its bound here"),
    "vacuous": ("no departure here", "the departure departs from nothing here"),
    "unjudged": ("not judged: its check is inconclusive", "not judged while their checks are inconclusive"),
}

#: Why a control is not judged where its check is inconclusive on the honest setting too (:func:`control_record`).
UNJUDGED = (
    "the check is inconclusive on the honest setting as well, so an inconclusive verdict on the departure says "
    "nothing of its power to fail; a run that decides the check judges the control (the check's line says what "
    "would settle it)"
)


def excuse(control: dict[str, Any]) -> str | None:
    """The first key of :data:`EXCUSES` a control entry carries, or None (not excused)."""
    return next((k for k in EXCUSES if k in control), None)


def control_ok(check: Check) -> bool:
    """No control, or it was detected, or it cannot be on this setting (undetectable by its bound: a loose
    bound, or a departure that does not lift the measurement; or a departure that departs from nothing
    here), or it is not judged (the check and the control both inconclusive: the exit status is then 4,
    the check's), or the check does not apply."""
    ctl = check.control
    return ctl is None or ctl["detected"] or excuse(ctl) is not None or check.verdict == "not applicable"


def exit_status(result: SuiteResult) -> int:
    """0 every check passes or is not applicable (and every control run of an applicable check is
    detected); 1 some check fails or some control is not detected; 4 none fails but some are
    inconclusive."""
    if any(c.verdict == "fail" for c in result.checks) or not result.controls_detected:
        return 1
    if any(c.verdict == "inconclusive" for c in result.checks):
        return 4
    return 0


class CheckError(RuntimeError):
    """A check raised on its data: a bug in the check, not a property of the setting (degenerate data
    -- NaN, inf, too few points -- gives an inconclusive verdict instead). The command exits 3."""


class NotApplicable(Exception):
    """An experiment that the setting cannot run (its checks are inconclusive, saying why)."""


#: The folder that holds the ``sgpverify`` package: code references are relative to it.
_ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))


def code_of(fn: Callable) -> str:
    """Where a check is: ``"sgpverify/suite/claims/bounds.py:18 (check_theorem1)"``."""
    try:
        path = inspect.getsourcefile(fn)
        line = inspect.getsourcelines(fn)[1]
        rel = os.path.relpath(path, _ROOT)
        return f"{rel}:{line} ({fn.__name__})"
    except (TypeError, OSError):  # pragma: no cover
        return fn.__name__
