"""What would settle an inconclusive check (or detect a control the run missed): the evidence it
lacks, the command that brings it, and what that would cost on this machine.

An inconclusive verdict says why (its ``measured`` and ``detail``); :func:`settle_hints` turns that
into the next round of :mod:`sgpverify.suite.settle` (the same rules: a ladder from the regime it
needs, a longer ladder where the local slopes still move, more replicas where an interval is too
wide), the command that runs it (``--only NAME --settle --budget M``) and its time, estimated from a
short calibration run of the engine on the user's own problem (:func:`~sgpverify.suite.cost.calibrate`:
measured throughput, not a constant). A check that no compute settles says so instead.
"""

from __future__ import annotations

import dataclasses
import math
from typing import Any

from .cost import duration, estimate_seconds
from .settle import evidence_for, needs_settling, round_config, round_controls

__all__ = ["SettleHint", "settle_hints"]


@dataclasses.dataclass(frozen=True)
class SettleHint:
    """What would settle one inconclusive check: ``why`` (what it lacks), ``config`` (the configuration
    lines of its next round, empty where no compute settles it), ``command`` and ``seconds`` (an
    estimate, None where there is nothing to run or no calibration)."""

    name: str
    why: str
    config: tuple[str, ...]
    command: str | None
    seconds: float | None

    def line(self) -> str:
        if self.command is None:
            return f"{self.name}: {self.why}"
        cost = "" if self.seconds is None else f" (its next round about {duration(self.seconds)} here, calibrated)"
        return f"{self.name}: {self.why} ({'; '.join(self.config)}): {self.command}{cost}"


def settle_hints(result: Any, per_step: tuple[float, float] | None = None, workers: int = 1) -> list[SettleHint]:
    """A :class:`SettleHint` for every inconclusive check of ``result`` (a SuiteResult), and for every
    decisive one whose control was not detected (named ``"NAME, its control CONTROL"``; its command
    keeps ``--controls``); ``per_step`` (``(a, b)`` of :func:`~sgpverify.suite.cost.calibrate`) turns
    the plans into times."""
    cfg = result.config
    rec = result.settle or {}
    out = []
    for c in result.checks:
        if not needs_settling(c):
            continue
        label, flags = c.name, "--settle"
        if c.verdict != "inconclusive":  # the check is decisive: what it lacks is its control's detection
            label, flags = f"{c.name}, its control {c.control.get('name', '')}".rstrip(), "--controls --settle"
        nxt = rec.get("next", {}).get(c.name)
        if nxt is not None:  # settling stopped it for the budget: its next round, as settling costed it
            cmd = _command(c.name, flags, nxt["seconds"])
            out.append(SettleHint(label, nxt["why"], tuple(nxt["config"]), cmd, nxt["seconds"]))
            continue
        if c.name in rec.get("left", {}):  # settling found nothing more to run, or ran its rounds
            out.append(SettleHint(label, rec["left"][c.name], (), None, None))
            continue
        ev = evidence_for(c, cfg)
        if not ev.runs:
            out.append(SettleHint(label, f"no compute settles it here ({ev.why})", (), None, None))
            continue
        secs = None
        if per_step is not None:
            sub = round_config(cfg, ev.overrides)
            with_ctl, only_ctl = round_controls([c], result.controls)  # what settling would run
            secs = estimate_seconds(
                sub, [c.name], per_step, with_ctl, workers, controls_only=only_ctl, theorem_steps=ev.steps
            )
        out.append(SettleHint(label, ev.why, tuple(ev.lines()), _command(c.name, flags, secs), secs))
    return out


def _command(name: str, flags: str, seconds: float | None) -> str:
    """The command that runs a check's next round: a budget of twice its estimate (20 minutes unestimated)."""
    budget = 20 if seconds is None else max(1, math.ceil(2 * seconds / 60))
    return f"your verify command with --only {name} {flags} --budget {budget}"
