"""Exact worst cases of SGP on a given schedule, by performance estimation (PEP).

With the mixing matrices of a schedule fixed, every iterate of SGP (and of
tau-OSGP through the delay-augmented matrices) is a known linear combination
of the start ``x0`` and of the gradients the nodes evaluate: the push-sum
weights are numbers, so ``z_i = x_i / w_i`` is linear too. The worst case of
``(1/K) sum_{k<K} ||grad f(xbar^k)||^2`` over a class of functions is then a
small semidefinite program over the Gram matrix of those vectors
(Drori-Teboulle; Taylor-Hendrickx-Glineur), which :func:`worst_case` builds
and solves.

The class (docs/tightness.md states it in full):

* each ``f_i`` is L-smooth, not necessarily convex (the interpolation
  conditions of PEPit's ``SmoothFunction``, Taylor-Hendrickx-Glineur 2017,
  Theorem 3.10), between every pair of points where ``f_i`` is evaluated;
* ``f(xbar^0) - f_* <= delta``, with ``f_*`` modelled by ``fstar``:
  ``"stationary"`` (default): a point ``x_*`` where ``grad f`` vanishes and
  whose value lies below ``f`` at every evaluated point ``xbar^k`` (``k <=
  K``); ``"last"``: as PEPit's nonconvex examples do, the last iterate
  stands for it, ``f(xbar^0) - f(xbar^K) <= delta``. The first class is
  contained in the second, so its worst case is the smaller;
* heterogeneity ``(1/n) sum_i ||grad f_i(y) - grad f(y)||^2 <= zeta2`` at
  every point ``y`` where all ``f_i`` are evaluated (``xbar^k`` and ``x_*``):
  a relaxation of the global assumption, which holds everywhere;
* optionally a gradient size ``(1/n) sum_i ||g_i^k||^2 <= G2sq`` at every
  step (the quantity the consensus bound (b2) of docs/theory.md uses).

Only the deterministic case ``sigma2 = 0`` is expressed: an additive noise
with second-moment constraints in expectation has no faithful Gram model of
a single run, and is left out (the function refuses ``sigma2 > 0``).

The SDP is built from the coefficient vectors directly (one vectorised
constraint block, ``engine="direct"``) or through PEPit's API
(``engine="pepit"``), from the same recursion; both need the optional
``pep`` extra: ``pip install 'sgpverify[pep]'``.
"""

from __future__ import annotations

import dataclasses
import importlib
import math
import time
from typing import Any

import numpy as np

from .mixing import MixingSchedule, mixing_schedule
from .validation import check_choice, check_float, check_int

__all__ = [
    "WorstCase",
    "WorstCaseProblem",
    "worst_case",
    "MEASURES",
    "FSTAR_MODELS",
    "ENGINES",
    "require_pep",
    "has_pep",
]

MEASURES = ("average", "min")
FSTAR_MODELS = ("stationary", "last")
ENGINES = ("direct", "pepit")
_EXTRA = "pip install 'sgpverify[pep]'"


def require_pep(engine: str = "direct") -> None:
    """Raise ImportError naming the ``pep`` extra unless its packages import
    (cvxpy and Clarabel; PEPit too for ``engine="pepit"``)."""
    mods = ["cvxpy", "clarabel"] + (["PEPit"] if engine == "pepit" else [])
    for mod in mods:
        try:
            importlib.import_module(mod)
        except ImportError as exc:
            raise ImportError(f"sgpverify.pep needs the pep extra ({_EXTRA}): {mod} is not installed ({exc})") from None


def has_pep() -> bool:
    """Whether the ``pep`` extra (PEPit, cvxpy, Clarabel) is installed."""
    try:
        require_pep("pepit")
    except ImportError:
        return False
    return True


@dataclasses.dataclass(frozen=True)
class WorstCase:
    """The worst case of SGP on a schedule, and the SDP that gave it.

    Attributes
    ----------
    value : float
        The worst-case measure (the solver's primal objective): the largest
        ``(1/K) sum_{k<K} ||grad f(xbar^k)||^2`` (or the minimum over k) over
        the class.
    dual_value : float or None
        The solver's dual objective (an upper bound up to its feasibility
        tolerance), where the solver reports it.
    duality_gap : float or None
        ``|dual_value - value|``.
    status : str
        The solver's status (``"optimal"``, ``"optimal_inaccurate"``, ...).
    solver, engine : str
    gram_size : int
        Side of the Gram matrix (the number of vectors: x0, the gradient
        evaluations, x_*).
    n_constraints : int
        Scalar constraints (interpolation, initial condition, heterogeneity,
        gradient size).
    seconds : float
        Wall time of building and solving.
    gram : ndarray
        The solution's Gram matrix (read-only).
    grad_norm_sq, consensus, value_gap : ndarray
        Per step k < K of the worst case: ``||grad f(xbar^k)||^2``,
        ``Xi^k = (1/n) sum_i ||xbar^k - z_i^k||^2`` and ``f(xbar^k) - f_*``
        (``f_*`` of the model; read from ``gram``).
    step_sq : ndarray
        ``(1/n) sum_i ||g_i^k||^2`` per step (the G_2^2 of (b2)).
    settings : dict
        n, K, tau, delay, L, step_size, delta, zeta2, G2sq, measure, fstar, schedule.
    """

    value: float
    dual_value: float | None
    duality_gap: float | None
    status: str
    solver: str
    engine: str
    gram_size: int
    n_constraints: int
    seconds: float
    gram: np.ndarray
    grad_norm_sq: np.ndarray
    consensus: np.ndarray
    value_gap: np.ndarray
    step_sq: np.ndarray
    settings: dict
    _model: Any = dataclasses.field(default=None, repr=False, compare=False)

    def to_dict(self) -> dict[str, Any]:
        """JSON-ready values (the Gram matrix as nested lists)."""
        out = {f.name: getattr(self, f.name) for f in dataclasses.fields(self) if not f.name.startswith("_")}
        for k in ("gram", "grad_norm_sq", "consensus", "value_gap", "step_sq"):
            out[k] = np.asarray(out[k]).tolist()
        return out

    def problem(self, rtol: float = 1e-7) -> WorstCaseProblem:
        """The worst-case functions read back from the solution, as a Problem-protocol object
        (:class:`WorstCaseProblem`) that :func:`sgpverify.simulate` can run."""
        return WorstCaseProblem(self, rtol=rtol)


class _Model:
    """The symbolic run: coefficient vectors over the Gram basis, function-value indices,
    and the scalar constraints, built once and handed to an SDP back end."""

    def __init__(self, n: int) -> None:
        self.n = n
        self.m = 1  # basis size: vector 0 is x0
        self.nF = 0
        # per function: list of (point coefficients, gradient coefficients, value index)
        self.evals: list[list[tuple[np.ndarray, np.ndarray, int]]] = [[] for _ in range(n)]
        self.quad: list[tuple[list, dict]] = []  # (terms [(c, a, b)], linear {F index: c}) <= rhs
        self.rhs: list[float] = []
        self.kinds: list[str] = []

    def leaf(self) -> np.ndarray:
        self.m += 1
        v = np.zeros(self.m)
        v[-1] = 1.0
        return v

    def value(self) -> int:
        self.nF += 1
        return self.nF - 1

    def evaluate(self, i: int, x: np.ndarray, grad: np.ndarray | None = None) -> tuple[np.ndarray, int]:
        """(gradient coefficients, value index) of f_i at x; the same point twice gives the same
        leaf (exact comparison of coefficients: equal points are equal vectors)."""
        for xe, ge, fe in self.evals[i]:
            if _same(xe, x):
                return ge, fe
        g = self.leaf() if grad is None else grad
        f = self.value()
        self.evals[i].append((x.copy(), g, f))
        return g, f

    def add(self, terms: list, lin: dict, rhs: float, kind: str) -> None:
        """``sum c <a, b> + sum_F c F <= rhs``."""
        self.quad.append((terms, lin))
        self.rhs.append(float(rhs))
        self.kinds.append(kind)


def _same(a: np.ndarray, b: np.ndarray) -> bool:
    k = min(a.size, b.size)
    return bool(np.array_equal(a[:k], b[:k]) and not np.any(a[k:]) and not np.any(b[k:]))


def _pad(v: np.ndarray, m: int) -> np.ndarray:
    return np.pad(v, (0, m - v.size)) if v.size < m else v


def _build(
    schedule: MixingSchedule,
    K: int,
    L: float,
    gamma: float,
    delta: float,
    zeta2: float | None,
    G2sq: float | None,
    fstar: str,
) -> tuple[_Model, dict]:
    n, N = schedule.n, schedule.N
    md = _Model(n)
    X = np.zeros((N, 1))
    X[:n, 0] = 1.0  # x_i^0 = x0 on every real node, buffers empty
    w = np.zeros(N)
    w[:n] = 1.0
    rec = {"xbar": [], "gbar": [], "fbar": [], "z": [], "g": []}

    def at_all(xb):
        """Evaluate every f_i at xb: mean gradient, gradients, mean value {F: 1/n}."""
        gs = [md.evaluate(i, xb) for i in range(n)]
        return gs

    def heterogeneity(gs):
        if zeta2 is None:
            return
        m = md.m
        G = np.array([_pad(g, m) for g, _ in gs])
        gb = G.mean(axis=0)
        md.add([(1.0 / n, g - gb, g - gb) for g in G], {}, zeta2, "heterogeneity")

    for k in range(K + 1):
        xb = X.sum(axis=0) / n
        gs = at_all(xb)
        heterogeneity(gs)
        rec["xbar"].append(xb)
        rec["gbar"].append([g for g, _ in gs])
        rec["fbar"].append([f for _, f in gs])
        if k == K:
            break
        zs, gz = [], []
        for i in range(n):
            z = X[i] / w[i]
            g, _ = md.evaluate(i, z)
            zs.append(z)
            gz.append(g)
        rec["z"].append(zs)
        rec["g"].append(gz)
        m = md.m
        if G2sq is not None:
            md.add([(1.0 / n, _pad(g, m), _pad(g, m)) for g in gz], {}, G2sq, "gradient size")
        Gk = np.zeros((N, m))
        for i, g in enumerate(gz):
            Gk[i] = _pad(g, m)
        X = np.pad(X, ((0, 0), (0, m - X.shape[1])))
        P = schedule.matrix(k).toarray()
        X = P @ (X - gamma * Gk)
        w = P @ w
    f0 = {f: 1.0 / n for f in rec["fbar"][0]}
    if fstar == "stationary":
        xs = md.leaf()
        gstar = [md.evaluate(i, xs)[0] for i in range(n - 1)]
        m = md.m
        last = -np.sum([_pad(g, m) for g in gstar], axis=0) if gstar else np.zeros(m)
        gstar.append(md.evaluate(n - 1, _pad(xs, m), grad=last)[0])
        fs = [md.evals[i][-1][2] for i in range(n)]
        heterogeneity([(g, None) for g in gstar])
        fsd = {f: 1.0 / n for f in fs}
        for fb in rec["fbar"]:  # f_* <= f(xbar^k), k = 0..K
            lin = dict(fsd)
            for f in fb:
                lin[f] = lin.get(f, 0.0) - 1.0 / n
            md.add([], lin, 0.0, "f* below")
        lower = fsd
    else:
        lower = {f: 1.0 / n for f in rec["fbar"][K - 1]}
    lin = dict(f0)
    for f, c in lower.items():
        lin[f] = lin.get(f, 0.0) - c
    md.add([], lin, delta, "initial condition")
    # interpolation: L-smooth, f_a - f_b >= -L/4 |xa-xb|^2 + 1/2 <ga+gb, xa-xb> + 1/(4L) |ga-gb|^2
    rec["lower"] = lower
    return md, rec


def _interpolation_rows(md: _Model) -> list[tuple[np.ndarray, np.ndarray, np.ndarray, np.ndarray]]:
    """Per function: (DX, SG, DG, pairs) over ordered pairs a != b of its evaluations."""
    m = md.m
    out = []
    for ev in md.evals:
        p = len(ev)
        if p < 2:
            continue
        Xp = np.array([_pad(x, m) for x, _, _ in ev])
        Gp = np.array([_pad(g, m) for _, g, _ in ev])
        Fp = np.array([f for _, _, f in ev])
        a, b = np.nonzero(~np.eye(p, dtype=bool))
        out.append((Xp[a] - Xp[b], Gp[a] + Gp[b], Gp[a] - Gp[b], np.stack([Fp[a], Fp[b]], axis=1)))
    return out


def _solve_direct(md: _Model, rec: dict, L: float, K: int, measure: str, solver: str, solver_options: dict):
    import cvxpy as cp
    import scipy.sparse as sp

    m, nF = md.m, md.nF
    rows_q, rows_f, rhs = [], [], []
    # interpolation rows as "<= 0": f_b - f_a - L/4 |dx|^2 + 1/2 <s, dx> + 1/(4L) |dg|^2 <= 0
    for DX, SG, DG, FF in _interpolation_rows(md):
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
            a, b = _pad(a, m), _pad(b, m)
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
    terms = [_quad_vec(_gbar(g, m, md.n), m) for g in rec["gbar"][:K]]
    Mq = np.array(terms)  # (K, m*m): ||grad f(xbar^k)||^2 = <Mq_k, G>
    if measure == "average":
        obj = cp.Maximize(Mq.mean(axis=0) @ cp.vec(G, order="C"))
    else:
        t = cp.Variable()
        cons.append(t <= Mq @ cp.vec(G, order="C"))
        obj = cp.Maximize(t)
    prob = cp.Problem(obj, cons)
    try:
        prob.solve(solver=solver, **solver_options)
    except cp.error.SolverError as exc:
        raise ArithmeticError(f"the PEP solver ({solver}) failed: {exc} (status {prob.status})") from None
    dual = None
    stats = getattr(prob.solver_stats, "extra_stats", None)
    if stats is not None and hasattr(stats, "obj_val_dual"):
        dual = -float(stats.obj_val_dual)  # cvxpy hands Clarabel the minimisation of -objective
    Gv = None if G.value is None else np.asarray(G.value)
    Fv = None if F.value is None else np.asarray(F.value)
    return prob.value, dual, str(prob.status), Gv, Fv, A.shape[0] + (K if measure == "min" else 0)


def _gbar(gs: list[np.ndarray], m: int, n: int) -> np.ndarray:
    return np.sum([_pad(g, m) for g in gs], axis=0) / n


def _quad_vec(a: np.ndarray, m: int) -> np.ndarray:
    a = _pad(a, m)
    return np.outer(a, a).ravel()


def _solve_pepit(md: _Model, rec: dict, L: float, K: int, measure: str, solver: str, solver_options: dict):
    from PEPit import PEP, Expression, Point
    from PEPit.functions import SmoothFunction

    pb = PEP()
    fns = [pb.declare_function(SmoothFunction, L=L) for _ in range(md.n)]
    m = md.m
    basis = [pb.set_initial_point()] + [Point() for _ in range(m - 1)]
    Fs = [Expression() for _ in range(md.nF)]

    def pt(c):
        c = _pad(c, m)
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
    mets = [(pt(_gbar(g, m, md.n))) ** 2 for g in rec["gbar"][:K]]
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
    return primal, dual, status, Gv, Fv, len(pb._list_of_constraints_sent_to_wrapper)


def worst_case(
    topology: Any,
    n_iter: int,
    *,
    L: float,
    step_size: float,
    tau: int = 0,
    delay: Any = "fixed",
    delta: float = 1.0,
    zeta2: float | None = None,
    G2sq: float | None = None,
    sigma2: float = 0.0,
    measure: str = "average",
    fstar: str = "stationary",
    seed: int | None = 0,
    engine: str = "direct",
    solver: str = "CLARABEL",
    solver_options: dict | None = None,
) -> WorstCase:
    """The exact worst case of SGP (tau-OSGP for ``tau > 0``) on a schedule.

    Parameters
    ----------
    topology : Topology, MixingSchedule, matrix or list of matrices
        The schedule; its actual matrices ``P^(k)`` (push weights for a
        topology; delay-augmented for ``tau > 0``) enter the SDP.
    n_iter : int
        K >= 1, the number of iterations.
    L : float
        Smoothness constant of every f_i, > 0.
    step_size : float
        gamma > 0.
    tau : int
        Maximum delay (0: SGP).
    delay : {"fixed", "random"}, DelayModel or matrix
        The delay model for ``tau > 0`` (see :func:`sgpverify.mixing.delay_model`).
    delta : float
        ``f(xbar^0) - f_* <= delta`` (> 0; the worst case scales linearly in it only where
        ``zeta2`` and ``G2sq`` are None).
    zeta2 : float, optional
        Heterogeneity bound at the points where every f_i is evaluated; None: unconstrained.
    G2sq : float, optional
        Bound on ``(1/n) sum_i ||g_i^k||^2`` at every step; None: unconstrained.
    sigma2 : float
        Must be 0: the stochastic case is not modelled (see the module notes).
    measure : {"average", "min"}
        ``(1/K) sum_{k<K} ||grad f(xbar^k)||^2`` (what Theorem 1 bounds) or its minimum over k < K.
    fstar : {"stationary", "last"}
        The model of ``f_*`` (module notes).
    seed : int, optional
        Seed of a random schedule or random delays.
    engine : {"direct", "pepit"}
        Build the SDP from the coefficient vectors (one vectorised constraint block) or
        through PEPit's API.
    solver : str
        A cvxpy solver name ("CLARABEL", "SCS").
    solver_options : dict, optional
        Passed to the solver.

    Returns
    -------
    WorstCase

    Raises
    ------
    ImportError
        Without the ``pep`` extra (the message names it).

    Notes
    -----
    The recursion is that of docs/theory.md section 1b: ``X^{k+1} = P^(k)(X^k - gamma G^k)``,
    ``w^{k+1} = P^(k) w^k``, gradients at ``z_i = x_i / w_i``, buffers included in xbar.
    The interpolation conditions are PEPit's for ``SmoothFunction``. docs/tightness.md
    states the class and the validation.

    Examples
    --------
    >>> import sgpverify as sv
    >>> from sgpverify.pep import worst_case
    >>> wc = worst_case(sv.graphs.complete(1), 3, L=1.0, step_size=1.0, fstar="last", measure="min")
    >>> round(wc.value, 4)  # gradient descent: min_{k<3} ||g_k||^2 with f(x_0) - f(x_2) <= 1 is 4/(3*2)
    0.6667
    """
    K = check_int("n_iter", n_iter, min_value=1)
    L = check_float("L", L, low=0.0, low_open=True)
    gamma = check_float("step_size", step_size, low=0.0, low_open=True)
    tau = check_int("tau", tau, min_value=0)
    delta = check_float("delta", delta, low=0.0, low_open=True)
    if zeta2 is not None:
        zeta2 = check_float("zeta2", zeta2, low=0.0)
    if G2sq is not None:
        G2sq = check_float("G2sq", G2sq, low=0.0)
    sigma2 = check_float("sigma2", sigma2, low=0.0)
    if sigma2 > 0:
        raise ValueError(
            f"sigma2 must be 0 (the PEP models a deterministic run; stochastic noise has no faithful Gram model "
            f"here), got {sigma2!r}"
        )
    check_choice("measure", measure, MEASURES)
    check_choice("fstar", fstar, FSTAR_MODELS)
    check_choice("engine", engine, ENGINES)
    if fstar == "last" and K < 2:
        raise ValueError(f"n_iter must be >= 2 with fstar='last' (f(xbar^0) - f(xbar^(K-1)) is 0 at K = 1), got {K}")
    if not isinstance(solver, str) or not solver:
        raise ValueError(f"solver must be a cvxpy solver name, got {solver!r}")
    require_pep(engine)
    schedule = (
        topology if isinstance(topology, MixingSchedule) else mixing_schedule(topology, tau=tau, delay=delay, seed=seed)
    )
    if isinstance(topology, MixingSchedule) and topology.tau != tau:
        raise ValueError(f"tau must match the schedule's tau = {topology.tau}, got {tau}")
    t0 = time.perf_counter()
    md, rec = _build(schedule, K, L, gamma, delta, zeta2, G2sq, fstar)
    run = _solve_direct if engine == "direct" else _solve_pepit
    primal, dual, status, Gv, Fv, ncons = run(md, rec, L, K, measure, solver, dict(solver_options or {}))
    seconds = time.perf_counter() - t0
    if primal is None or Gv is None or not math.isfinite(primal):
        raise ArithmeticError(f"the PEP solver ({solver}) returned no solution: status {status}")
    Gv = 0.5 * (Gv + Gv.T)
    md.G, md.F = Gv, Fv
    m, n = md.m, md.n

    def sq(v):
        v = _pad(v, m)
        return float(v @ Gv @ v)

    gns = np.array([sq(_gbar(g, m, n)) for g in rec["gbar"][:K]])
    cons = np.array([np.mean([sq(rec["xbar"][k] - z) for z in rec["z"][k]]) for k in range(K)])
    step = np.array([np.mean([sq(g) for g in rec["g"][k]]) for k in range(K)])
    flow = sum(c * Fv[j] for j, c in rec["lower"].items())
    gap = np.array([np.mean([Fv[f] for f in rec["fbar"][k]]) - flow for k in range(K)])
    G_ro = Gv.copy()
    for a in (G_ro, gns, cons, step, gap):
        a.setflags(write=False)
    return WorstCase(
        value=float(primal),
        dual_value=dual,
        duality_gap=None if dual is None else abs(dual - float(primal)),
        status=status,
        solver=solver,
        engine=engine,
        gram_size=m,
        n_constraints=int(ncons),
        seconds=seconds,
        gram=G_ro,
        grad_norm_sq=gns,
        consensus=cons,
        value_gap=gap,
        step_sq=step,
        settings=dict(
            n=n,
            K=K,
            tau=tau,
            delay=delay if isinstance(delay, str) else type(delay).__name__,
            L=L,
            step_size=gamma,
            delta=delta,
            zeta2=zeta2,
            G2sq=G2sq,
            measure=measure,
            fstar=fstar,
            schedule=schedule.name,
        ),
        _model=(md, rec),
    )


class WorstCaseProblem:
    """The worst-case functions of a :class:`WorstCase`, read back from its Gram matrix.

    The Gram matrix is factored as ``G = Y^T Y`` (``dim`` = its numerical rank);
    every vector of the run (x0, each gradient) gets its coordinates from ``Y``.
    By the interpolation theorem an L-smooth function with these values and
    gradients exists; this object answers its oracle at the points the worst
    case visits (to a relative tolerance ``rtol``) and refuses anywhere else,
    which is what a run of the same schedule needs (:func:`sgpverify.simulate`
    reproduces the worst case exactly when its recursion is the PEP's).
    """

    sigma2 = 0.0

    def __init__(self, wc: WorstCase, rtol: float = 1e-7) -> None:
        md, rec = wc._model
        G = wc.gram
        lam, V = np.linalg.eigh(G)
        keep = lam > max(lam.max(), 0.0) * 1e-12
        Y = (V[:, keep] * np.sqrt(lam[keep])).T  # (d, m)
        self._Y = Y
        self.n_nodes = md.n
        self.dim = int(Y.shape[0])
        self.L = wc.settings["L"]
        self.zeta2 = wc.settings["zeta2"] if wc.settings["zeta2"] is not None else math.inf
        m = md.m
        self._tables = []
        for ev in md.evals:
            Xp = np.array([Y @ _pad(x, m) for x, _, _ in ev])
            Gp = np.array([Y @ _pad(g, m) for _, g, _ in ev])
            Fp = np.array([md.F[f] for _, _, f in ev])
            self._tables.append((Xp, Gp, Fp))
        self.f_star = float(sum(c * md.F[j] for j, c in rec["lower"].items()))
        self.f_lower = self.f_star
        self.x0 = Y[:, 0].copy()
        self._scale = float(np.sqrt(max(np.max(np.diag(G)), 0.0))) or 1.0
        self._rtol = float(rtol)

    def _find(self, i: int, x: np.ndarray) -> int:
        Xp = self._tables[i][0]
        d = np.linalg.norm(Xp - x, axis=1)
        j = int(np.argmin(d))
        if d[j] > self._rtol * self._scale:
            raise ValueError(
                f"the worst-case function f_{i} is known only at the points the worst case visits: the nearest "
                f"is {d[j]:.3g} away (> rtol * scale = {self._rtol * self._scale:.3g})"
            )
        return j

    def grad(self, z: np.ndarray, rng: Any = None) -> np.ndarray:
        z = np.asarray(z, dtype=float)
        flat = z.reshape(-1, self.n_nodes, self.dim)
        out = np.empty_like(flat)
        for r in range(flat.shape[0]):
            for i in range(self.n_nodes):
                out[r, i] = self._tables[i][1][self._find(i, flat[r, i])]
        return out.reshape(z.shape)

    def _mean(self, x, what):
        x = np.asarray(x, dtype=float)
        flat = x.reshape(-1, self.dim)
        out = []
        for v in flat:
            vals = [self._tables[i][what][self._find(i, v)] for i in range(self.n_nodes)]
            out.append(np.mean(vals, axis=0))
        return np.array(out).reshape(x.shape[:-1] + np.shape(out[0]))

    def full_grad(self, x: np.ndarray) -> np.ndarray:
        return self._mean(x, 1)

    def value(self, x: np.ndarray) -> np.ndarray:
        return self._mean(x, 2)

    def __repr__(self) -> str:
        return f"<WorstCaseProblem n={self.n_nodes}, dim={self.dim}, L={self.L:g}>"
