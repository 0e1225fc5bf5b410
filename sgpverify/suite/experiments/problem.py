"""The experiment on the problem itself: are its declared constants what its gradients show?"""

from __future__ import annotations

import math
import warnings
from typing import TYPE_CHECKING, Any

import numpy as np

from ...engine import simulate
from ...errors import EffectiveStepWarning
from ...problems import check_constants
from ..departures import NONE, Declared, Variant
from ..setting import resolve_problem, setting_schedules

if TYPE_CHECKING:
    from collections.abc import Callable

    from ..config import SuiteConfig

__all__ = ["exp_declared", "RUN_POINTS"]

#: Iterates of the short run whose node states are added to the points the constants are checked at.
RUN_POINTS = 16


def exp_declared(
    cfg: SuiteConfig,
    seed: int,
    variant: Variant = NONE,
    progress: Callable[[str], None] | None = None,
) -> dict[str, Any]:
    """:func:`sgpverify.problems.check_constants` on the setting's problem (at n), at the start
    point and at the node states a short SGP run visits (the setting's first schedule, the smallest
    K of ``Ks``, gamma = sqrt(n/K): where the suite's runs go first). Under the control's departure
    the problem declares ``declare_L`` times its L; where that is no lie its gradients can show (a
    declared L above the largest curvature they show by more than ``1 / declare_L``: a loose class
    bound), it declares ``declare_L`` times that curvature instead, which they refute by construction,
    and the data says so (``control_L``)."""
    inner = resolve_problem(cfg.problem, cfg)(cfg.n, seed)
    if variant.declare_L == 1.0:
        return _declared(cfg, seed, inner, progress)
    out = _declared(cfg, seed, Declared(inner, variant.declare_L), progress)
    L = out["L"]
    if L["refuted"] or not (isinstance(L["estimate"], float) and 0.0 < L["estimate"] < math.inf):
        return out  # refuted as declared (the defaults'), or no curvature seen to undercut
    factor = variant.declare_L * L["estimate"] / float(inner.L)
    out = _declared(cfg, seed, Declared(inner, factor), None)
    out["control_L"] = (
        f"L/{1 / variant.declare_L:g} = {variant.declare_L * float(inner.L):.4g} is not below the largest curvature "
        f"the gradients show ({L['estimate']:.4g}: the declared L = {float(inner.L):.4g} is a loose bound, and "
        f"its half may be none at all); declared instead {variant.declare_L:g} x that curvature, "
        f"{variant.declare_L * L['estimate']:.4g}, a constant the gradients refute"
    )
    return out


def _declared(cfg: SuiteConfig, seed: int, prob: Any, progress: Callable[[str], None] | None) -> dict[str, Any]:
    """:func:`exp_declared` on ``prob`` as given."""
    label, make = setting_schedules(cfg)[0]
    K = min(cfg.Ks)
    x0 = np.full(prob.dim, cfg.x0)
    points = [x0[None, :]]
    try:
        with warnings.catch_warnings():
            warnings.simplefilter("ignore", EffectiveStepWarning)
            tr = simulate(
                prob,
                make(cfg.n, seed),
                step_size=math.sqrt(cfg.n / K),
                n_iter=K,
                x0=x0,
                seed=seed,
                record_every=K,
                record_states=max(1, K // RUN_POINTS),
            )
        points.append(np.asarray(tr.z_history).reshape(-1, prob.dim))
        visited = f"{label}, K = {K}"
    except ArithmeticError as exc:  # a run that diverges: the constants are still checked at the start
        visited = f"none (the run on {label} at K = {K} diverged: {exc})"
    res = check_constants(prob, np.concatenate(points), seed=seed)
    out = res.to_dict()
    out["f_star"] = _f_star(prob, out)
    out.update(visited=visited, problem=repr(prob))
    if progress:
        progress("declared constants")
    return out


def _f_star(prob, out):
    """The declared f* (optional in the protocol) against the lowest value seen: refuted where some
    point has a lower value, beyond round-off (the f_lower estimate's tolerance)."""
    fs = getattr(prob, "f_star", None)
    low = out["f_lower"]
    if fs is None or low.get("estimate") is None:
        return None
    fs = float(fs)
    refuted = low["estimate"] < fs - low["tolerance"]
    return {
        "name": "f_star",
        "declared": fs,
        "estimate": low["estimate"],
        "refuted": bool(refuted),
        "detail": f"declared f* = {fs:.6g} "
        + (
            f"refuted: a point has f = {low['estimate']:.6g} < f*"
            if refuted
            else "not refuted by the lowest value seen"
        ),
    }
