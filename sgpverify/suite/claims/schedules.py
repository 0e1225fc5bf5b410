"""The claim on the schedule: the mixing assumptions hold and the measured constants are valid."""

from __future__ import annotations

import math
from typing import TYPE_CHECKING, Any

from ..records import Claim, make_control
from .common import combine, fmt

if TYPE_CHECKING:
    from ..config import SuiteConfig

__all__ = ["MIXING_CONSTANTS", "check_mixing_constants"]


def check_mixing_constants(cfg: SuiteConfig, data: dict[str, Any]) -> dict[str, Any]:
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
        measured = [r.get(k) for k in ("weight_min", "envelope_worst_ratio", "q", "C")]
        broken = [v for v in measured if v is not None and not math.isfinite(v) and v != math.inf]
        verdicts.append("fail" if fails else ("inconclusive" if broken else "pass"))
        if broken and not fails:
            fails_note = "; a measured constant is NaN: nothing can be said"
        else:
            fails_note = ""
        run = (
            f"; connected over all {r['run_steps']} steps of the longest run (B = {r['run_B']}; the other "
            f"constants over the first {r.get('horizon')} steps)"
            if r.get("run_steps") is not None and r.get("run_B") is not None
            else ""
        )
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
            f"weights >= {r['weight_min']:.3g} (delta_theory {fmt(r.get('delta_theory'))}), "
            f"q_exact = {fmt(r.get('q_exact'))}, q_lyapunov = {fmt(r.get('q_lyapunov'))}, envelope "
            f"C = {fmt(r.get('C'))}, q = {fmt(r.get('q'))} ({r.get('q_source')}); fitted C = {fmt(r.get('C_fit'))}, "
            f"q = {fmt(r.get('q_fit'))} (worst deviation / fitted envelope "
            f"{fmt(r.get('fit_envelope_worst_ratio'))}); log10(1 - q_theory) = {fmt(r.get('q_theory_log10_gap'))}"
            + eff
            + run
            + fails_note
        )
    fam_bad = []
    for r in data["mixing"]["families"]:
        if r.get("q_theory_valid") is False or (r.get("envelope_worst_ratio") or 0) > 1 + 1e-9:
            fam_bad.append(r["topology"])
        parts.append(
            f"{r['topology']}: envelope q = {fmt(r.get('q'))} ({r.get('q_source')}), q_fit = {fmt(r.get('q_fit'))}, "
            f"log10(1 - q_theory) = {fmt(r.get('q_theory_log10_gap'))}, weights >= {r['weight_min']:.3g}"
        )
    if fam_bad:
        verdicts.append("fail")
        parts.append("families failing: " + ", ".join(fam_bad))
    n_ok = sum(v == "pass" for v in verdicts[: len(data["mixing"]["schedules"])])
    return dict(
        verdict=combine(verdicts),
        measured=f"{len(data['mixing']['schedules'])} schedule(s), {n_ok} hold; "
        f"{len(data['mixing']['families'])} families",
        predicted="assumptions hold; constants valid",
        detail="; ".join(parts),
    )


MIXING_CONSTANTS = Claim(
    "mixing-constants",
    "Assumption 3 and the product lemma: column-stochastic, positive self-weights, B-strongly connected; "
    "|P^(k:s)_ij - phi_i| <= C q^(k-s)",
    ("mixing",),
    "check_mixing on every schedule of the setting; worst deviation over the envelope C q^t "
    "over the whole measured horizon",
    "pass iff every assumption holds on every schedule and the envelope bounds every measured deviation",
    make_control(
        "disconnected",
        "the setting's schedule with every message to node 0 removed (not strongly connected)",
        ("mixing",),
        disconnect=True,
    ),
    check_mixing_constants,
)
