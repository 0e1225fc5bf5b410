"""An a-posteriori check of a first-order solve of the PEP (SCS): how exact its value is.

SCS (ADMM) stops where its residuals fall below ``eps_abs + eps_rel * scale``: the point it
returns satisfies the constraints to about that, no better, and its dual objective is that of
multipliers as inexact. Its status says "solved" on its own scaled residuals, which need not
mean that the value is good to the suite's tolerance. This module checks the returned solution
with its own arithmetic, independently of the solver's bookkeeping:

* primal: the largest ``lhs - rhs`` of the SDP's scalar constraints at the returned variables,
  relative to the scale (the largest diagonal entry of the Gram matrix or the largest function
  value, at least 1); and the smallest eigenvalue of each PSD block relative to its largest;
* dual: the solver's multipliers ``y`` of the inequalities, clipped at 0 and corrected (least-norm
  changes on their support) so that ``B^T y = 0`` holds, as the free function values require. For
  the measure "min", the multipliers ``u`` of ``t <= <M_k, G>`` are scaled to sum to 1 and weigh the
  objective ``c = sum_k u_k M_k``. Weak duality: for every feasible point,
  ``c . z <= rhs^T y + <c - A^T y, z> = rhs^T y - sum_b <S_b, M_b>`` with the dual slack
  ``S_b = (A^T y - c)_b``. Where every ``S_b`` is PSD, ``rhs^T y`` is an UPPER bound on the worst
  case. The class bounds no trace of the Gram matrix (x_* may lie arbitrarily far), so a negative
  eigenvalue of ``S_b`` cannot be paid for: the bound is accepted only where every
  ``lambda_min(S_b) >= -eig_tol`` of its largest eigenvalue (round-off), else it is None.

The check passes only where the solver said solved, the violations and ``-lambda_min`` are at
most ``rtol``, the dual bound exists and ``|bound - value| <= rtol * |value|``; :func:`check_rtol`
is the suite's tolerance rule (``max(1e-6, 1e-7 * gram side)``).
"""

from __future__ import annotations

import dataclasses
from collections.abc import Callable
from typing import Any

import numpy as np
import scipy.sparse as sp

from .formulation import Model, full_violation

#: The relative accuracy of a worst case (the rule of the suite's worst-case check and of this check:
#: ``max(RTOL, RTOL_PER_SIDE * gram side)``). At the suite's defaults' size: Clarabel stops at a relative gap
#: and feasibility of 1e-8, and the defaults' Gram matrices have side m = 37, so a worst case is good to about
#: m * 1e-8 < 1e-6 (a reported duality gap is added on top).
RTOL = 1e-6

#: Per unit of Gram side beyond the defaults: two "optimal" solves of one reduced SDP (n = 8, K = 10, side 169;
#: with and without equilibration) differed by 2.4e-6 relative, 1.4e-8 per unit of side; ten times that.
RTOL_PER_SIDE = 1e-7

#: Round-off allowance on the dual slack's smallest eigenvalue, relative to its largest.
EIG_TOL = 1e-7


def check_rtol(gram_size: int) -> float:
    """The relative tolerance a worst case of a Gram matrix of side ``gram_size`` is checked to."""
    return max(RTOL, RTOL_PER_SIDE * int(gram_size))


@dataclasses.dataclass(frozen=True)
class Check:
    """The a-posteriori check of a solution (module notes)."""

    passed: bool
    rtol: float
    value: float
    reported: float
    dual_bound: float | None
    rel_gap: float | None
    max_violation: float
    full_violation: float | None
    lambda_min: float
    dual_lambda_min: float
    balance: float
    solver_status: str
    iterations: int | None
    res_pri: float | None
    res_dual: float | None

    def to_dict(self) -> dict:
        return dataclasses.asdict(self)


def balance(Bf: sp.csr_array, y: np.ndarray, rounds: int = 10) -> tuple[np.ndarray, float]:
    """``y >= 0`` corrected so that ``Bf^T y = 0``: least-norm changes on the support, dropping a
    multiplier that would turn negative, a few times. Returns y and ``max |Bf^T y|`` left."""
    y = np.maximum(np.asarray(y, dtype=float), 0.0)
    BT = sp.csc_array(Bf.T)
    for _ in range(rounds):
        r = BT @ y
        supp = np.flatnonzero(y > 0)
        if supp.size == 0 or not np.any(r):
            break
        d = np.linalg.lstsq(BT[:, supp].toarray(), -r, rcond=None)[0]
        y2 = y.copy()
        y2[supp] += d
        if np.all(y2 >= 0):
            y = y2
            break
        y = np.maximum(y2, 0.0)
    return y, float(np.abs(BT @ y).max(initial=0.0))


def _rel_min_eig(M: np.ndarray) -> float:
    w = np.linalg.eigvalsh(0.5 * (M + M.T))
    top = float(np.abs(w).max(initial=0.0))
    return 0.0 if top == 0.0 else float(w[0]) / top


def check_solution(
    *,
    A: sp.csr_array,
    Bf: sp.csr_array,
    rhs: np.ndarray,
    c: np.ndarray,
    z: np.ndarray,
    F: np.ndarray,
    y: np.ndarray,
    blocks: list[tuple[slice, Callable[[np.ndarray], np.ndarray]]],
    scale: float,
    value: float,
    reported: float,
    rtol: float,
    solver_status: str,
    solved: bool,
    full_violation: float | None = None,
    eig_tol: float = EIG_TOL,
    stats: dict | None = None,
) -> Check:
    """Check ``max c.z`` s.t. ``A z + Bf F <= rhs``, ``M_b(z[sl_b]) PSD`` at a returned (z, F) with
    inequality multipliers y. ``blocks`` holds each block's slice of z and the linear map from that
    slice to its symmetric matrix, which must satisfy ``s . z[sl] = <map(s), map(z[sl])>`` (the svec
    isometry, or a plain reshape for a full vec). ``value`` is the measure recomputed at (z, F),
    ``reported`` the solver's objective (they must agree to ``rtol``); ``scale`` the scale that
    violations are relative to; ``full_violation`` an already relative extra primal check."""
    scale = max(1.0, float(scale))
    viol = float(np.max(A @ z + Bf @ F - rhs, initial=-np.inf)) / scale
    lam = min((_rel_min_eig(to_mat(z[sl])) for sl, to_mat in blocks), default=0.0)
    yb, bal = balance(Bf, y)
    s = A.T @ yb - c
    dlam = min((_rel_min_eig(to_mat(s[sl])) for sl, to_mat in blocks), default=0.0)
    bound = float(rhs @ yb) if dlam >= -eig_tol and bal <= eig_tol * max(1.0, float(np.abs(yb).max())) else None
    gap = None if bound is None else abs(bound - value) / max(abs(value), 1e-300)
    worst = max(viol, full_violation if full_violation is not None else -np.inf)
    same = abs(reported - value) <= rtol * max(abs(value), 1e-300)
    passed = bool(solved and same and worst <= rtol and -lam <= rtol and gap is not None and gap <= rtol)
    st = stats or {}
    return Check(
        passed=passed,
        rtol=float(rtol),
        value=float(value),
        reported=float(reported),
        dual_bound=bound,
        rel_gap=gap,
        max_violation=viol,
        full_violation=full_violation,
        lambda_min=float(lam),
        dual_lambda_min=float(dlam),
        balance=bal,
        solver_status=str(solver_status),
        iterations=None if st.get("iter") is None else int(st["iter"]),
        res_pri=None if st.get("res_pri") is None else float(st["res_pri"]),
        res_dual=None if st.get("res_dual") is None else float(st["res_dual"]),
    )


def check_first_order(
    prob: Any,
    cons: list,
    measure: str,
    Mq: np.ndarray,
    A: sp.csr_array,
    Bf: sp.csr_array,
    rhs: np.ndarray,
    z: np.ndarray,
    F: np.ndarray,
    blocks: list[tuple[slice, Callable[[np.ndarray], np.ndarray]]],
    md: Model,
    G: np.ndarray,
    Fv: np.ndarray,
    L: float,
) -> tuple[str, float | None, Check]:
    """The check of a cvxpy solve (``cons[0]``: the inequalities; for ``measure="min"``, ``cons[-1]``:
    ``t <= Mq @ z``) at its solution ``z``, ``F`` (read back as the full Gram matrix ``G`` and function
    values ``Fv`` of ``md``, whose every node's constraints are checked too). Returns the status
    ("optimal" only where cvxpy said so and the check passed, else "optimal_inaccurate" or cvxpy's),
    the certified dual bound (or None) and the :class:`Check`."""
    if measure == "average":
        c = Mq.mean(axis=0)
        value = float(c @ z)
    else:  # the multipliers of t <= <M_k, G>, scaled to sum to 1 (the stationarity in t)
        u = np.maximum(np.asarray(cons[-1].dual_value, dtype=float), 0.0)
        c = (u / max(float(u.sum()), 1e-300)) @ Mq
        value = float((Mq @ z).min())
    scale = max(1.0, float(np.abs(np.diag(G)).max()), float(np.abs(Fv).max()))
    info = (getattr(prob.solver_stats, "extra_stats", None) or {}).get("info", {})
    optimal = str(prob.status) == "optimal"
    chk = check_solution(
        A=A,
        Bf=Bf,
        rhs=rhs,
        c=c,
        z=z,
        F=F,
        y=np.asarray(cons[0].dual_value, dtype=float),
        blocks=blocks,
        scale=scale,
        value=value,
        reported=float(prob.value),
        rtol=check_rtol(md.m),
        solver_status=str(info.get("status", prob.status)),
        solved=optimal,
        full_violation=full_violation(md, G, Fv, L) / scale,
        stats=info,
    )
    status = str(prob.status)
    if optimal and not chk.passed:
        status = "optimal_inaccurate"
    return status, chk.dual_bound, chk
