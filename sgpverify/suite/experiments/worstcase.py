"""The experiment of the worst-case check: the exact worst case (sgpverify.pep) beside the bounds and a run."""

from __future__ import annotations

import dataclasses
import itertools
import math
import warnings
from typing import TYPE_CHECKING, Any

import numpy as np

from ... import theory
from ...errors import EffectiveStepWarning
from ...mixing import mixing_schedule
from ..departures import NONE, Variant
from ..runs import simulate_run
from ..setting import resolve_problem, setting_schedules

if TYPE_CHECKING:
    from collections.abc import Callable

    from ..config import SuiteConfig

__all__ = [
    "exp_worstcase",
    "complete_worstcase_control",
    "spectral_sum",
    "tightness_table",
    "PEP_UNAVAILABLE",
    "FULL_SDP_NK",
    "FULL_RETRY_NK",
]

#: The reason the worst-case check does not apply without the optional extra.
PEP_UNAVAILABLE = "not applicable: install the pep extra (pip install 'sgpverify[pep]')"


#: The largest n K at which the check solves the full SDP (the defaults' n = 4, K = 4: a few seconds, and the
#: same bits as before the reduction existed). Beyond it, a schedule with a symmetry the package knows is
#: solved in the symmetry-reduced form (the same value, blocks of side about 2K instead of one of side
#: about 2nK): n = 8, K = 8 takes about as long reduced as n = 4, K = 4 in full (docs/tightness.md).
FULL_SDP_NK = 16

#: Up to this n K, a reduced solve that ends short of optimal is repeated in full (n = 4, K = 10: about 10 s;
#: n = 8, K = 5: about a minute); the full solve is kept where it ends optimal.
FULL_RETRY_NK = 40


def spectral_sum(schedule: Any, K: int) -> tuple[float, float]:
    """``(S2, delta)`` of the first K steps of a (possibly delay-augmented) schedule, exactly:
    ``S2 = max_{k <= K} sum_{s<k} ||M^(k,s)||_2`` with ``M^(k,s) = Phi(k-1:s)[real, real] - w^k 1^T / n``
    (docs/theory.md, (b2)) and ``delta = min_{k <= K} min_i w_i^k`` over the real nodes."""
    n, N = schedule.n, schedule.N
    mats = [schedule.matrix(k).toarray() for k in range(K)]
    w = np.zeros(N)
    w[:n] = 1.0
    ws = [w]
    for P in mats:
        ws.append(P @ ws[-1])
    S2, delta = 0.0, float(np.min(ws[0][:n]))
    for k in range(1, K + 1):
        wk = ws[k][:n]
        delta = min(delta, float(np.min(wk)))
        Phi = np.eye(N)
        tot = 0.0
        for s in range(k - 1, -1, -1):  # Phi(k-1:s) = P^(k-1) ... P^(s)
            Phi = Phi @ mats[s]
            M = Phi[:n, :n] - np.outer(wk, np.ones(n)) / n
            tot += float(np.linalg.norm(M, 2))
        S2 = max(S2, tot)
    return S2, delta


def exp_worstcase(
    cfg: SuiteConfig,
    seed: int,
    variant: Variant = NONE,
    progress: Callable[[str], None] | None = None,
) -> dict[str, Any]:
    """Per schedule of the setting, tau in ``pep_taus`` and K in ``pep_Ks``, at n = ``pep_n``: the
    published bound, the derived bound (c2), the PEP worst case and the measured average of a
    deterministic run (sigma = 0) of the setting's problem, all at the same (n, K, gamma, L, zeta2).

    Without the ``pep`` extra the data says so (``available: False``); under the control's
    variant (``drop_term``) nothing is solved: the control's data is the main run's, completed by
    :func:`complete_worstcase_control`."""
    from ... import pep
    from ...assumptions import check_mixing
    from .bounds import theorem_threshold

    if variant.drop_term:
        return {"drop_term": variant.drop_term}
    if not pep.has_pep():
        return {"available": False, "reason": PEP_UNAVAILABLE}
    n = cfg.pep_n
    quiet = dataclasses.replace(cfg, sigma=0.0, n=n)
    prob = resolve_problem(cfg.problem, quiet)(n, seed)
    L, sigma2, zeta2 = float(prob.L), float(prob.sigma2), float(prob.zeta2)
    fs = getattr(prob, "f_star", None)
    out = []
    for label, make in setting_schedules(cfg):
        topo = make(n, seed)
        for tau, K in itertools.product(cfg.pep_taus, cfg.pep_Ks):
            gamma = min(math.sqrt(n / K), 1.0 / L)
            e = {"label": label, "tau": tau, "n": n, "K": K, "gamma": gamma, "L": L, "zeta2": zeta2, "sigma2": sigma2}
            with warnings.catch_warnings():  # a finding of the run (its effective step), kept in its record
                warnings.simplefilter("ignore", EffectiveStepWarning)
                tr = simulate_run(cfg, prob, topo, K, seed, gamma, 1, tau=tau, delay=cfg.delay)
            gns = np.asarray(tr.grad_norm_sq, float)
            val = np.asarray(tr.value, float)
            f0 = float(val[0])
            Delta = f0 - (float(fs) if fs is not None else float(prob.f_lower))
            G2sq = float(np.max(np.asarray(tr.step_sq, float)[:K]))
            e.update(measured=float(np.mean(gns[:K])), Delta=Delta, G2sq=G2sq, f_star_known=fs is not None)
            e["effective_step"] = float(tr.effective_step_max)
            sched = mixing_schedule(topo, tau=tau, delay=cfg.delay, seed=seed)
            S2, delta = spectral_sum(sched, K)
            e.update(S2=S2, weight_min=delta)
            # a stochastic problem (a user's, whose noise the setting cannot switch off): the PEP's class is
            # the deterministic one with the same L, Delta, zeta^2 and G_2, and the bound at sigma^2 = 0 is
            # the one it must lie under (the bound only grows with sigma^2)
            s2 = 0.0 if sigma2 > 0 else sigma2
            if sigma2 > 0:
                e["stochastic"] = True
            e["derived"] = float(
                theory.evaluate(
                    theory.COMBINED_BOUND_L2,
                    Delta=Delta,
                    gamma=gamma,
                    K=K,
                    L=L,
                    sigma2=s2,
                    n=n,
                    S2=S2,
                    G2=math.sqrt(G2sq),
                    delta=delta,
                )
            )
            e["optimization_terms"] = float(
                theory.evaluate(theory.OPTIMIZATION_TERMS, Delta=Delta, gamma=gamma, K=K, L=L, sigma2=s2, n=n)
            )
            e["published"] = float(theory.evaluate(theory.PUBLISHED_BOUND, Delta=Delta, L=L, sigma2=s2, n=n, K=K))
            try:
                rep = check_mixing(topo, tau=tau, delay=cfg.delay, horizon=cfg.mixing_horizon, seed=seed)
                C, q = rep.C, rep.q
            except Exception:  # noqa: BLE001 - a schedule check_mixing cannot place: regime unknown
                C, q = None, None
            thr = theorem_threshold(dataclasses.replace(cfg, n=n), L, C, q) if C is not None and q is not None else None
            e.update(threshold=thr, in_regime=None if thr is None else bool(K >= thr))
            args = dict(L=L, step_size=gamma, tau=tau, delay=cfg.delay, delta=Delta, zeta2=zeta2, G2sq=G2sq, seed=seed)
            # the full SDP up to the defaults' size (the same bits as before the reduction), the reduced one beyond
            full = n * K <= FULL_SDP_NK
            wc = pep.worst_case(topo, K, symmetry=None if full else "auto", **args)
            if not full and wc.symmetry is not None:
                if wc.status != "optimal" and n * K <= FULL_RETRY_NK:
                    # the reduced SDP is not always the better conditioned one: the full form where affordable
                    alt = pep.worst_case(topo, K, symmetry=None, **args)
                    if alt.status == "optimal":
                        e.update(reduced_status=wc.status, reduced_group=wc.symmetry)
                        wc = alt
                if wc.symmetry is not None:
                    e.update(reduced=wc.symmetry, blocks=list(wc.block_sizes))
            elif wc.status != "optimal" and sched.n > 1 and pep.detect_symmetry(sched, K) is not None:
                # the same SDP in its symmetry-reduced form (the same value, smaller blocks, where the schedule
                # has a symmetry the package knows): a solve that the full form's scaling left inaccurate
                # often ends optimal there
                red = pep.worst_case(topo, K, symmetry="auto", **args)
                e.update(full_status=wc.status, reduced=red.symmetry, blocks=list(red.block_sizes))
                wc = red
            e.update(
                worst_case=wc.value,
                dual=wc.dual_value,
                status=wc.status,
                gram_size=wc.gram_size,
                n_constraints=wc.n_constraints,
                solver=wc.solver,
                wc_grad_norm_sq=wc.grad_norm_sq.tolist(),
                wc_consensus=wc.consensus.tolist(),
            )
            out.append(e)
            if progress:
                progress(f"worst case {label} tau={tau} K={K}")
    return {"available": True, "entries": out}


def complete_worstcase_control(main: dict, ctl: dict) -> dict:
    """The control's data: the main run's, with the term the control drops from the derived bound."""
    return {**main, "drop_term": ctl.get("drop_term")}


def tightness_table(result: dict[str, Any]) -> str:
    """A markdown table of :func:`exp_worstcase`'s result: per schedule, tau and K, the published bound,
    the derived bound (c2), the exact worst case, the measured average and the ratios (docs/tightness.md)."""
    if not result.get("available", False):
        return result.get("reason", PEP_UNAVAILABLE)
    head = (
        "| schedule | tau | K | gamma | published | derived (c2) | worst case | measured | published / worst "
        "| derived / worst | Gram |"
    )
    lines = [head, "|---|---|---|---|---|---|---|---|---|---|---|"]
    for e in result["entries"]:
        wc = e.get("worst_case")
        if wc is None:
            continue
        lines.append(
            f"| {e['label']} | {e['tau']} | {e['K']} | {e['gamma']:.3g} | {e['published']:.4g} | {e['derived']:.4g} "
            f"| {wc:.4g} | {e['measured']:.3g} | {e['published'] / wc:.3g} | {e['derived'] / wc:.3g} "
            f"| {e['gram_size']} |"
        )
    return "\n".join(lines)
