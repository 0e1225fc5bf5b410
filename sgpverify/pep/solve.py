"""The SDP back ends of the full PEP: one vectorised cvxpy constraint block (``engine="direct"``)
or PEPit's API (``engine="pepit"``), from the same symbolic run (:mod:`.formulation`)."""

from __future__ import annotations

import warnings
from typing import TYPE_CHECKING, Any

import numpy as np

from .formulation import Model, gbar, interpolation_rows, pad, quad_vec
from .posterior import check_first_order

if TYPE_CHECKING:
    import cvxpy as cp


def solve_direct(md: Model, rec: dict, L: float, K: int, measure: str, solver: str, solver_options: dict) -> tuple:
    """The full SDP: (primal, dual, status, Gram matrix, function values, scalar constraints, check); with
    SCS, ``check`` is the :class:`.posterior.Check` of the solution (else None)."""
    import cvxpy as cp
    import scipy.sparse as sp

    m, nF = md.m, md.nF
    rows_q, rows_f, rhs = [], [], []
    # interpolation rows as "<= 0": f_b - f_a - L/4 |dx|^2 + 1/2 <s, dx> + 1/(4L) |dg|^2 <= 0
    for DX, SG, DG, FF in interpolation_rows(md):
        Q = (
            -L / 4 * np.einsum("ri,rj->rij", DX, DX)
            + 0.25 * (np.einsum("ri,rj->rij", SG, DX) + np.einsum("ri,rj->rij", DX, SG))
            + 1 / (4 * L) * np.einsum("ri,rj->rij", DG, DG)
        ).reshape(len(DX), m * m)
        rows_q.append(sp.csr_array(Q))
        r = np.arange(len(DX))
        rows_f.append(
            sp.csr_array(
                (
                    np.concatenate([np.ones(len(r)), -np.ones(len(r))]),
                    (np.concatenate([r, r]), np.concatenate([FF[:, 1], FF[:, 0]])),
                ),
                shape=(len(r), nF),
            )
        )
        rhs.append(np.zeros(len(r)))
    Qo, Fo = [], []
    for terms, lin in md.quad:
        q = np.zeros((m, m))
        for c, a, b in terms:
            a, b = pad(a, m), pad(b, m)
            q += 0.5 * c * (np.outer(a, b) + np.outer(b, a))
        Qo.append(q.ravel())
        f = np.zeros(nF)
        for j, c in lin.items():
            f[j] += c
        Fo.append(f)
    if Qo:
        rows_q.append(sp.csr_array(np.array(Qo)))
        rows_f.append(sp.csr_array(np.array(Fo)))
        rhs.append(np.array(md.rhs))
    A = sp.vstack(rows_q).tocsr()
    B = sp.vstack(rows_f).tocsr()
    c = np.concatenate(rhs)
    G = cp.Variable((m, m), PSD=True)
    F = cp.Variable(nF)
    cons = [A @ cp.vec(G, order="C") + B @ F <= c]
    terms = [quad_vec(gbar(g, m, md.n), m) for g in rec["gbar"][:K]]
    Mq = np.array(terms)  # (K, m*m): ||grad f(xbar^k)||^2 = <Mq_k, G>
    prob, dual = maximize_measure(Mq, cp.vec(G, order="C"), measure, cons, solver, solver_options)
    Gv = None if G.value is None else np.asarray(G.value)
    Fv = None if F.value is None else np.asarray(F.value)
    status, check = str(prob.status), None
    if solver == "SCS" and Gv is not None and Fv is not None:  # a first-order solve: checked a posteriori
        blocks = [(slice(0, m * m), lambda s: s.reshape(m, m))]
        status, dual, check = check_first_order(prob, cons, measure, Mq, A, B, c, Gv.ravel(), Fv, blocks, md, Gv, Fv, L)
    return prob.value, dual, status, Gv, Fv, A.shape[0] + (K if measure == "min" else 0), check


def solve_pepit(md: Model, rec: dict, L: float, K: int, measure: str, solver: str, solver_options: dict) -> tuple:
    from PEPit import PEP, Expression, Point
    from PEPit.functions import SmoothFunction

    pb = PEP()
    fns = [pb.declare_function(SmoothFunction, L=L) for _ in range(md.n)]
    m = md.m
    basis = [pb.set_initial_point()] + [Point() for _ in range(m - 1)]
    Fs = [Expression() for _ in range(md.nF)]

    def pt(c):
        c = pad(c, m)
        out = None
        for j in np.flatnonzero(c):
            t = float(c[j]) * basis[j]
            out = t if out is None else out + t
        return out if out is not None else 0 * basis[0]

    for i, ev in enumerate(md.evals):
        for x, g, f in ev:
            fns[i].add_point((pt(x), pt(g), Fs[f]))
    for (terms, lin), rhs in zip(md.quad, md.rhs):
        e = None
        for c, a, b in terms:
            t = c * (pt(a) * pt(b))
            e = t if e is None else e + t
        for j, c in lin.items():
            t = c * Fs[j]
            e = t if e is None else e + t
        pb.add_constraint(e <= rhs)
    mets = [(pt(gbar(g, m, md.n))) ** 2 for g in rec["gbar"][:K]]
    if measure == "average":
        tot = mets[0]
        for e in mets[1:]:
            tot = tot + e
        pb.set_performance_metric(tot / K)
    else:
        for e in mets:
            pb.set_performance_metric(e)
    dual = pb.solve(wrapper="cvxpy", solver=solver, verbose=0, **solver_options)
    wr = pb.wrapper
    primal = float(wr.prob.value) if getattr(wr, "prob", None) is not None and wr.prob.value is not None else None
    status = str(wr.prob.status) if getattr(wr, "prob", None) is not None else "unknown"
    Gv = getattr(pb, "G_value", None)
    Fv = getattr(pb, "F_value", None)
    order = [basis[j] for j in range(m)]
    # PEPit orders its Gram by creation counter: ours were created first, in basis order
    if Gv is not None:
        Gv = np.asarray(Gv)[:m, :m]
    if Fv is not None:
        Fv = np.array([f.eval() for f in Fs])
    del order
    return primal, dual, status, Gv, Fv, len(pb._list_of_constraints_sent_to_wrapper), None


#: Clarabel's settings for the second solve of a PEP that ended "optimal_inaccurate": no equilibration, and
#: iterative refinement of each linear solve to round-off (of the inaccurate solves met in docs/tightness.md's
#: sizes, each one that either setting alone brought to "optimal", this pair did too).
RETRY_OPTIONS = dict(
    equilibrate_enable=False,
    iterative_refinement_reltol=1e-15,
    iterative_refinement_abstol=1e-15,
    iterative_refinement_max_iter=50,
)


def _retried(prob: cp.Problem, obj: Any, cons: list, solver: str, solver_options: dict) -> cp.Problem:
    """The problem solved once more with :data:`RETRY_OPTIONS` (the caller's own options win), where that one
    ends optimal; else ``prob`` as it was (its inaccurate solution stands, and says so in its status)."""
    import cvxpy as cp

    again = cp.Problem(obj, cons)
    try:
        with warnings.catch_warnings():
            warnings.simplefilter("ignore", UserWarning)
            again.solve(solver=solver, **{**RETRY_OPTIONS, **solver_options})
    except cp.error.SolverError:
        return prob
    return again if again.status == cp.OPTIMAL else prob


def maximize_measure(
    Mq: np.ndarray, var: cp.Expression, measure: str, cons: list, solver: str, solver_options: dict
) -> tuple[cp.Problem, float | None]:
    """Solve the PEP: maximise the measure of ``Mq @ var`` (the squared gradient norms at the iterates:
    their average, or their minimum over k) under ``cons``. Returns the problem and the solver's dual
    objective (None where the solver gives none); a solver failure is an ArithmeticError."""
    import cvxpy as cp

    if measure == "average":
        obj = cp.Maximize(Mq.mean(axis=0) @ var)
    else:
        t = cp.Variable()
        cons.append(t <= Mq @ var)
        obj = cp.Maximize(t)
    prob = first = cp.Problem(obj, cons)
    try:
        with warnings.catch_warnings(record=True) as said:
            warnings.simplefilter("always")
            prob.solve(solver=solver, **solver_options)
        if prob.status == cp.OPTIMAL_INACCURATE and solver == "CLARABEL" and "equilibrate_enable" not in solver_options:
            # Clarabel's equilibration (a rescaling of the data) and its linear solves' refinement can leave a
            # PEP with constraints of very different scales short of its tolerances; once more without the one
            # and with more of the other, kept only if that one ends optimal (values agree to about 1e-6)
            prob = _retried(prob, obj, cons, solver, solver_options)
    except cp.error.SolverError as exc:
        raise ArithmeticError(f"the PEP solver ({solver}) failed: {exc} (status {prob.status})") from None
    if prob is first:  # the first solve's warnings stand with its solution (dropped where the retry replaced it)
        for w in said:
            warnings.warn(w.message, w.category, stacklevel=2)
    dual = None
    stats = getattr(prob.solver_stats, "extra_stats", None)
    if stats is not None and hasattr(stats, "obj_val_dual"):
        dual = -float(stats.obj_val_dual)  # cvxpy hands Clarabel the minimisation of -objective
    return prob, dual
