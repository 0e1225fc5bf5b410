"""What would settle an inconclusive check: the evidence it lacks, a configuration that brings it,
and what that would cost on this machine.

An inconclusive verdict says why (its ``measured`` and ``detail``); :func:`settle_hints` turns the
reasons the suite's checks give into a plan: a longer K ladder where the step-size regime or
Theorem 1's threshold is not reached (``needs K >= X``), a longer ladder where the local slopes
are still moving, nothing where no compute settles the check (a problem that changes with n, a
missing optional extra). Each plan is a ``--config`` file's lines beside the command
(``sgpverify verify --only NAME --config settle-NAME.toml``), and an estimate of its time from
a short calibration run of the engine on the user's own problem and first schedule
(:func:`calibrate`: measured throughput, not a constant).

This is a plan, not a settling: the rounds of ``verify --settle`` with error control across
rounds are not built yet, so the ladder is the user's to run, once, with the criteria fixed.
"""

from __future__ import annotations

import dataclasses
import math
import re
import time
import warnings
from typing import Any

__all__ = ["SettleHint", "calibrate", "settle_hints"]

#: Checks whose ladder is ``Ks`` (the rate runs) and those with their own.
_LADDERS = {
    "stationarity-rate": "Ks",
    "consensus-rate": "Ks",
    "mass-conservation": "Ks",
    "linear-speedup": "speedup_Ks",
    "delay-robustness": "delay_Ks",
    "delay-rate": "delay_Ks",
    "delay-consensus": "delay_Ks",
    "topology-ratio": "topology_Ks",
    "peers": "topology_Ks",
    "baselines": "baseline_Ks",
    "consensus-scaling": "scaling_Ks",
}


@dataclasses.dataclass(frozen=True)
class SettleHint:
    """What would settle one inconclusive check: ``why`` (what it lacks), ``config`` (the lines of a
    ``--config`` file, empty where no compute settles it), ``command`` and ``seconds`` (an estimate,
    None where there is nothing to run)."""

    name: str
    why: str
    config: tuple[str, ...]
    command: str | None
    seconds: float | None

    def line(self) -> str:
        if self.command is None:
            return f"{self.name}: {self.why}"
        cost = "" if self.seconds is None else f", about {_duration(self.seconds)} of one core here (calibrated)"
        plan = f"{'; '.join(self.config)} in settle-{self.name}.toml, then {self.command}"
        return f"{self.name}: {self.why}: {plan}{cost}"


def _duration(s: float) -> str:
    if s < 90:
        return f"{s:.0f} s"
    if s < 5400:
        return f"{s / 60:.0f} min"
    return f"{s / 3600:.1g} h"


def calibrate(cfg: Any, seed: int = 0, steps: int = 256) -> tuple[float, float]:
    """``(a, b)``: seconds per step of the engine on the setting's problem (n, d) and first schedule
    are about ``a + b R`` with R replicas, from two short runs (``steps`` steps, 1 and
    ``rate_replicas`` replicas)."""
    import numpy as np

    from ..engine import simulate
    from ..errors import EffectiveStepWarning
    from .setting import resolve_problem, setting_schedules

    prob = resolve_problem(cfg.problem, cfg)(cfg.n, seed)
    _, make = setting_schedules(cfg)[0]
    topo = make(cfg.n, seed)
    R = max(2, cfg.rate_replicas)
    per = []
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", EffectiveStepWarning)
        for r in (1, R):
            t0 = time.perf_counter()
            x0 = np.full(cfg.d, cfg.x0)
            simulate(prob, topo, step_size=math.sqrt(cfg.n / steps), n_iter=steps, x0=x0, replicas=r)
            per.append((time.perf_counter() - t0) / steps)
    b = max(0.0, (per[1] - per[0]) / (R - 1))
    return max(0.0, per[0] - b), b


def _ladder(K: float) -> list[int]:
    """Five doublings from the power of two at or above K."""
    k0 = 2 ** math.ceil(math.log2(max(K, 2)))
    return [k0 * 2**i for i in range(5)]


def settle_hints(result: Any, per_step: tuple[float, float] | None = None) -> list[SettleHint]:
    """A :class:`SettleHint` for every inconclusive check of ``result`` (a SuiteResult); ``per_step``
    (``(a, b)`` of :func:`calibrate`) turns the plans into times."""
    cfg = result.config
    out = []

    def cost(steps, replicas, runs):
        """Seconds of ``runs`` runs of ``steps`` steps with ``replicas`` replicas, on one worker."""
        return None if per_step is None else steps * (per_step[0] + per_step[1] * replicas) * runs

    # the replicas and the runs of each ladder's experiment (schedules, delays, algorithms, sizes)
    shape = {
        "Ks": (cfg.rate_replicas, len(cfg.topologies)),
        "speedup_Ks": (cfg.speedup_replicas, len(cfg.topologies) * sum(cfg.speedup_ns) / cfg.n),
        "delay_Ks": (cfg.delay_replicas, len(cfg.topologies) * len(cfg.taus)),
        "topology_Ks": (cfg.topology_replicas, len(cfg.topologies) + len(cfg.compare_topologies)),
        "baseline_Ks": (cfg.replicas, len(cfg.topologies) * 4),
        "scaling_Ks": (cfg.scaling_replicas, len(cfg.topologies) * 3),
    }

    for c in result.checks:
        if c.verdict != "inconclusive":
            continue
        text = f"{c.measured}; {c.detail}"
        m = re.search(r"needs K >= ([0-9.]+(?:e[+-]?[0-9]+)?)", text)
        key = _LADDERS.get(c.name)
        if "changes with n" in text or "not applicable" in c.measured:
            out.append(SettleHint(c.name, f"no compute settles it here ({c.measured})", (), None, None))
            continue
        if c.name == "theorem1-bound" and m:
            K = float(m.group(1))
            lines = (f"theorem_K_cap = {int(2 ** math.ceil(math.log2(K)))}",)
            secs = cost(K, cfg.theorem_replicas, len(cfg.topologies))
            why = f"Theorem 1's threshold needs K >= {K:.2g}"
        elif m and key:
            ks = _ladder(float(m.group(1)))
            lines = (f"{key} = {ks}",)
            secs = cost(sum(ks), *shape[key])
            why = f"the step-size regime needs K >= {float(m.group(1)):.2g}"
        elif key:
            ks = list(getattr(cfg, key))
            longer = ks + [ks[-1] * 2, ks[-1] * 4]
            lines = (f"{key} = {longer}",)
            secs = cost(sum(longer), *shape[key])  # a new ladder: every K runs again
            why = "the ladder ends before the local slopes settle: two more doublings"
        else:
            out.append(SettleHint(c.name, f"see its detail in report.md ({c.measured})", (), None, None))
            continue
        cmd = f"your verify command with --only {c.name} --config settle-{c.name}.toml"
        out.append(SettleHint(c.name, why, lines, cmd, secs))
    return out
