"""The worst-case claim: our derived bound lies above the exact worst case, and a run below it."""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from ...pep.posterior import RTOL as PEP_RTOL
from ...pep.posterior import RTOL_PER_SIDE as PEP_RTOL_PER_SIDE
from ..criteria import pep_tolerance
from ..records import Claim, make_control
from .common import all_finite, combine

if TYPE_CHECKING:
    from ..config import SuiteConfig

__all__ = ["WORST_CASE", "check_worst_case", "PEP_RTOL", "PEP_RTOL_PER_SIDE", "NOT_APPLICABLE"]

#: The verdict of a check whose optional dependency is missing: it never changes the exit status.
NOT_APPLICABLE = "not applicable"


def _form(e: dict[str, Any]) -> str:
    """Which SDP gave an entry's worst case, where it was not the full one."""
    if e.get("reduced_status"):
        return f"; the full SDP, the symmetry-reduced one ({e['reduced_group']}) having ended {e['reduced_status']}"
    if not e.get("reduced"):
        return ""
    b = e.get("blocks")
    sides = f", blocks of side {', '.join(str(x) for x in b)}" if b else ""
    why = f", the full one having ended {e['full_status']}" if e.get("full_status") else ""
    return f"; the symmetry-reduced SDP ({e['reduced']}{sides}){why}"


def check_worst_case(cfg: SuiteConfig, data: dict[str, Any]) -> dict[str, Any]:
    """Derived bound (c2) >= PEP worst case >= measured average, per schedule and tau."""
    d = data["worstcase"]
    if not d.get("available", False):
        return dict(
            verdict=NOT_APPLICABLE,
            measured=d.get("reason", "not applicable"),
            predicted="-",
            detail=d.get("reason", "not applicable"),
            extra={},
        )
    drop = data["worstcase"].get("drop_term") or ""
    verdicts, parts, rows = [], [], []
    for e in d["entries"]:
        where = f"{e['label']} tau={e['tau']} (n = {e['n']}, K = {e['K']}, gamma = {e['gamma']:.3g})"
        wc = e.get("worst_case")
        derived = e["optimization_terms"] if drop == "consensus" else e["derived"]
        if wc is None:
            verdicts.append("inconclusive")
            parts.append(f"{where}: {e.get('why', 'no worst case')}")
            continue
        if not all_finite(wc, derived, e["measured"], e["published"]):
            verdicts.append("inconclusive")
            parts.append(f"{where}: a bound, the worst case or the measured average is not finite")
            continue
        if e.get("status") != "optimal":
            verdicts.append("inconclusive")
            parts.append(f"{where}: the SDP solver ended with status {e.get('status')}")
            continue
        tol = pep_tolerance(e)
        bad = []
        if derived < wc * (1 - tol):
            bad.append("the derived bound lies below the worst case: the derivation is wrong")
        if e.get("stochastic"):  # the run has the problem's noise: outside the deterministic class solved
            pass
        elif e["measured"] > wc * (1 + tol):
            bad.append(
                "the measured average exceeds the worst case: the problem breaks the class (a declared constant?)"
            )
        if e["gamma"] * e["L"] > 1 + tol:
            verdicts.append("inconclusive")
            bad.append("gamma L > 1: outside (c2)'s hypothesis")
        else:
            verdicts.append("fail" if bad else "pass")
        reg = {None: "regime unknown", True: "K in its regime", False: "K outside its regime"}[e.get("in_regime")]
        rows.append(
            dict(
                label=e["label"],
                tau=e["tau"],
                published=e["published"],
                derived=derived,
                worst_case=wc,
                measured=e["measured"],
            )
        )
        parts.append(
            f"{where}: published {e['published']:.4g} ({reg}), derived{' without its consensus term' if drop else ''} "
            f"{derived:.4g}, worst case {wc:.4g} (Gram matrix {e['gram_size']} x {e['gram_size']}"
            + _form(e)
            + "), measured "
            f"{e['measured']:.4g}"
            + (
                f" (stochastic, sigma2 = {e['sigma2']:.3g}: the class solved is the deterministic one with the "
                "problem's L, Delta, zeta^2 and G_2, the bounds are at sigma^2 = 0, and the noisy run is not compared)"
                if e.get("stochastic")
                else ""
            )
            + f"; derived / worst case = {derived / wc:.3g}"
            + (f": {'; '.join(bad)}" if bad else "")
        )
    ratios = [r["derived"] / r["worst_case"] for r in rows if r["worst_case"] > 0]
    return dict(
        verdict=combine(verdicts),
        measured=f"derived / worst case >= {min(ratios):.3g}" if ratios else "n/a",
        predicted="measured <= worst case <= derived",
        detail="; ".join(parts),
        extra={"rows": rows},
    )


WORST_CASE = Claim(
    "worst-case",
    "docs/tightness.md: the exact worst case (performance estimation over L-smooth f_i with the problem's "
    "Delta, zeta^2 and G_2) of (1/K) sum ||grad f(xbar^k)||^2 lies below the derived bound (c2) and above "
    "the measured average, at the same (n, K, gamma, L, zeta^2)",
    ("worstcase",),
    "derived (c2) / PEP worst case, and measured / worst case, per schedule and tau in pep_taus",
    "pass iff derived >= worst case (1 - tol) and measured <= worst case (1 + tol) everywhere, tol = max(1e-6, "
    "1e-7 x the Gram side) + the solver's relative duality gap; the full SDP up to n K = 16, beyond it the "
    "symmetry-reduced one where the schedule has a known symmetry; inconclusive where the solver is not optimal "
    "(a full SDP that is not is solved again reduced where the schedule has a known symmetry, a reduced one again "
    "in full up to n K = 40) or gamma L > 1; not applicable without the pep extra; on a stochastic problem the "
    "class is the deterministic one with its constants, the bounds are taken at sigma^2 = 0 and the measured "
    "(noisy) run is not compared",
    make_control(
        "dropped-consensus-term",
        "the derived bound without its consensus term L^2 (gamma S2 G2 / delta)^2 (a derivation error)",
        ("worstcase",),
        drop_term="consensus",
    ),
    check_worst_case,
    uses=("L", "zeta2", "f_lower", "f_star"),
)
