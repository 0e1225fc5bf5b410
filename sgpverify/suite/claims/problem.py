"""The claim on the problem: its declared constants are not refuted by its own gradients and values."""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from ..records import Claim, make_control
from .common import fmt

if TYPE_CHECKING:
    from ..config import SuiteConfig

__all__ = ["DECLARED_CONSTANTS", "check_declared_constants", "CONSTANT_NAMES"]

#: The declared constants checked, in report order (f_star only where the problem declares it).
CONSTANT_NAMES = ("L", "sigma2", "zeta2", "f_lower", "f_star", "bias")


def check_declared_constants(cfg: SuiteConfig, data: dict[str, Any]) -> dict[str, Any]:
    """Assumptions 1-2 with the declared constants: no sampled lower bound (L, sigma^2, zeta^2) exceeds
    its declared value beyond the sampling error, no value seen lies below f_lower (or f*), the
    noise variance exists, and the stochastic gradients' mean is the exact gradient (bias 0)."""
    d = data["declared"]
    got = [d[k] for k in CONSTANT_NAMES if isinstance(d.get(k), dict)]
    refuted = [c for c in got if c["refuted"]]
    short = []
    for c in got:
        if c["name"] in ("f_lower", "f_star"):
            short.append(f"{c['name']} {fmt(c['declared'])} (lowest f seen {fmt(c['estimate'])})")
        elif c["name"] == "bias":
            short.append(f"bias 0 (>= {fmt(c['estimate'])})" if c["method"] != "not tested" else "bias not tested")
        else:
            est = "inf (no variance)" if c["estimate"] is None else fmt(c["estimate"])
            short.append(f"{c['name']} {fmt(c['declared'])} (>= {est})")
    detail = (
        (f"the control's constant: {d['control_L']}; " if d.get("control_L") else "")
        + f"at {d['points']} points (the start and the states of a run on {d['visited']}, and random points "
        f"around them), {d['pairs']} pairs, {d['samples']} gradient draws at {d['noise_points']} points: "
        + "; ".join(c["detail"] for c in got)
    )
    return dict(
        verdict="fail" if refuted else "pass",
        measured=("REFUTED " + ", ".join(c["name"] for c in refuted) + ": " if refuted else "") + ", ".join(short),
        predicted="declared >= lower bounds (f_lower <= every value)",
        detail=detail,
        extra={"refuted": [c["name"] for c in refuted], "infinite_variance": d.get("infinite_variance")},
    )


DECLARED_CONSTANTS = Claim(
    "declared-constants",
    "Assumptions 1-2: each f_i is L-smooth, the stochastic gradients are unbiased with variance <= sigma^2 at "
    "every node, the heterogeneity is <= zeta^2 and f >= f_lower, with the constants the problem declares "
    "(the bounds use them)",
    ("declared",),
    "sampled lower bounds of L (gradient differences, incl. close pairs along the top curvature), sigma^2 "
    "(one-sided 99% bound of the largest per-node mean squared deviation, Bonferroni), zeta^2 (the spread "
    "of the local gradients) and of inf f (the lowest value seen, after gradient descent), at the start point "
    "and at the states a run visits; Hill's tail index of the squared deviations; the draws' mean offset from "
    "the exact gradient (one-sided 99% bound of a U-statistic of ||E g - grad f||^2, Bonferroni over points)",
    "fail iff a declared constant is below its lower bound beyond the sampling error and round-off, f_lower "
    "(or f*) above a value seen, the noise variance does not exist (tail index of ||g - grad f_i||^2 "
    "below 1 at 99.75%), or the draws' mean is offset from the exact gradient beyond sampling error and "
    "round-off (bias); every claim that uses a refuted constant is then inconclusive",
    make_control(
        "declared-L-half",
        "the problem declares L/2, or half the largest curvature its gradients show where L/2 is still above "
        "it (a loose declared L): a smoothness constant its gradients refute",
        ("declared",),
        declare_L=0.5,
    ),
    check_declared_constants,
)
