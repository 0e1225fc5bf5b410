"""A low-rank solve of the symmetry-reduced PEP, with bounds on both sides.

The reduced SDP of :mod:`.reduced` has one PSD block per real character of the schedule's group;
Clarabel's dense scalings of those blocks cost ``n K^6``. The worst cases are of low rank and use
few of node 0's interpolation pairs (benchmarks/pep_active.py), so this module solves the SAME
SDP differently:

* Burer-Monteiro: each block ``M_b = V_b V_b^T`` with ``V_b`` of ``r`` columns (a conjugate pair's
  block as ``[[Wr, -Wi], [Wi, Wr]]``, so that ``M_b`` has the structure the reduced SDP reads
  back); the inequality constraints by an augmented Lagrangian (Powell-Hestenes-Rockafellar form,
  multipliers clipped at 0), each subproblem minimised by scipy's L-BFGS-B over the factors and
  node 0's function values;
* constraint generation: the interpolation pairs of the same and neighbouring steps (and every pair
  with x_*) first, then after each solve every pair is evaluated (vectorised) and the violated
  ones are added, until none is violated beyond ``feas_tol`` of the scale;
* bounds: the primal point, checked against EVERY constraint of the reduced SDP, gives the
  LOWER bound (its largest violation relative to the scale is reported; it is a worst case of a
  class relaxed by that much). Multipliers ``y >= 0`` re-fitted to the stationarity equations on
  the near-active constraints (bounded least squares), then corrected to satisfy the function
  values' equations ``B^T y = 0`` exactly, give the dual slack ``S_b = sum_i y_i A_ib - C_b`` per
  block; where every ``lambda_min(S_b) >= -eig_tol ||S_b||``, weak duality gives the UPPER bound
  ``rhs^T y``. The trace of a feasible Gram matrix is not bounded by the class (x_* may lie
  arbitrarily far in the nonconvex class), so a negative ``lambda_min`` cannot be paid for by a
  trace bound: the upper bound is then None (no certificate), and the eigenvector grows the rank.
  The bound is certified to ``eig_tol`` (the round-off of the eigenvalue computation), no further.

A result is called exact only when ``upper - lower <= rtol * max(1, |lower|)``; otherwise it is a
lower bound. The null direction ``x0 + x_*`` (the whole run moved by one vector leaves every
constraint and the measure unchanged) is removed from the trivial block first, so that it is no
spurious zero eigenvalue of the factors.
"""

from __future__ import annotations

import dataclasses
import time

import numpy as np
import scipy.sparse as sp
from scipy.optimize import lsq_linear, minimize

from .formulation import Model, full_violation, pad
from .reduced import Layout, unhat
from .symmetry import NodeGroup

LOWRANK = "lowrank"

DEFAULTS = dict(
    rank=4,
    max_rank=80,
    feas_tol=1e-8,
    rtol=1e-4,
    eig_tol=1e-7,
    rounds=30,
    alm_iters=60,
    inner_iters=500,
    gtol=1e-9,
    method="trust-krylov",
    switch=1e-5,
    max_sigma=1e4,
    grow=4,
    ftol=1e-12,
    maxcor=20,
    seed=0,
    verbose=False,
)


def check_options(options: dict) -> dict:
    """The options of a low-rank solve: DEFAULTS updated by ``options`` (unknown keys refused)."""
    bad = sorted(set(options) - set(DEFAULTS))
    if bad:
        raise ValueError(f"solver_options for solver='lowrank' must be among {sorted(DEFAULTS)}, got {bad}")
    return {**DEFAULTS, **options}


@dataclasses.dataclass
class Bounds:
    """The two bounds of a low-rank solve and how they were reached."""

    lower: float
    upper: float | None
    exact: bool
    gap: float | None
    max_violation: float
    full_violation: float
    lambda_min: float | None
    rank: tuple
    pairs: int
    rounds: int
    seconds: float


class _Problem:
    """The reduced SDP as factors: hat rows of every vector the constraints use, their blocks."""

    def __init__(self, md: Model, rec: dict, group: NodeGroup, L: float, K: int) -> None:
        stationary = md.n_inv == 2
        lay = Layout(md, group, stationary)
        self.lay, self.L, self.K, m = lay, L, K, md.m
        ev = md.evals[0]
        self.T = len(ev)
        X = lay.hat(np.array([pad(x, m) for x, _, _ in ev]))
        G = lay.hat(np.array([pad(g, m) for _, g, _ in ev]))
        self.Fidx = np.array([f % md.per_node for _, _, f in ev])
        self.p = md.per_node
        # generic quadratic constraints: sum c <u, v> + lin F <= rhs
        U, W, cs, rows = [], [], [], []
        lin = np.zeros((len(md.quad), self.p))
        for i, ((terms, ln), _) in enumerate(zip(md.quad, md.rhs)):
            for c, u, v in terms:
                U.append(pad(u, m))
                W.append(pad(v, m))
                cs.append(c)
                rows.append(i)
            for j, c in ln.items():
                lin[i, j % self.p] += c
        self.nq = len(md.quad)
        self.qrhs = np.array(md.rhs)
        self.qlin = sp.csr_array(lin)
        self.qc, self.qrow = np.array(cs), np.array(rows, dtype=np.int64)
        nt = len(cs)
        gb = np.array([np.mean([pad(u, m) for u in g], axis=0) for g in rec["gbar"][:K]])
        hat_rows = [X, G] + ([lay.hat(np.array(U)), lay.hat(np.array(W))] if nt else []) + [lay.hat(gb)]
        H = np.vstack(hat_rows)
        self.sl_x, self.sl_g = slice(0, self.T), slice(self.T, 2 * self.T)
        self.sl_u, self.sl_w = slice(2 * self.T, 2 * self.T + nt), slice(2 * self.T + nt, 2 * self.T + 2 * nt)
        self.sl_o = slice(2 * self.T + 2 * nt, H.shape[0])
        # the trivial block's x-coordinates reduced to the span the constraints use (x0 - x_*, or none)
        ni = lay.n_inv
        used = np.vstack([X[:, :ni] - X[:1, :ni], G[:, :ni]])
        _, s, vt = np.linalg.svd(used, full_matrices=False)
        self.Q = vt[s > 1e-12 * max(1.0, s.max(initial=0.0))].T  # (ni, q)
        self.blocks = []  # (kind, H_b, coords, side)
        for b, (kind, coords, _, _side) in enumerate(lay.blocks):
            Hb = H[:, coords]
            if b == 0:
                Hb = np.concatenate([Hb[:, :ni] @ self.Q, Hb[:, ni:]], axis=1)
            self.blocks.append((kind, np.ascontiguousarray(Hb), coords, Hb.shape[1]))
        self.stationary = stationary
        self.steps = _steps(md, rec, self.T, K)

    # ---- parameters -------------------------------------------------------------------------
    def shapes(self, ranks: list[int]) -> list[tuple[int, int, int]]:
        out = []
        for (kind, _, _, side), r in zip(self.blocks, ranks):
            out.append((side // 2, r, 2) if kind == "pair" else (side, r, 1))
        return out

    def unpack(self, theta: np.ndarray, ranks: list[int]) -> tuple[list[np.ndarray], np.ndarray]:
        Vs, off = [], 0
        for side, r, k in self.shapes(ranks):
            size = side * r * k
            P = theta[off : off + size].reshape(k, side, r)
            off += size
            Vs.append(P[0] if k == 1 else np.block([[P[0], -P[1]], [P[1], P[0]]]))
        return Vs, theta[off:]

    def pack_grad(self, dVs: list[np.ndarray], dF: np.ndarray, ranks: list[int]) -> np.ndarray:
        parts = []
        for dV, (side, r, k) in zip(dVs, self.shapes(ranks)):
            if k == 1:
                parts.append(dV.ravel())
            else:
                dWr = dV[:side, :r] + dV[side:, r:]
                dWi = -dV[:side, r:] + dV[side:, :r]
                parts += [dWr.ravel(), dWi.ravel()]
        return np.concatenate(parts + [dF])

    def embed(self, Vs: list[np.ndarray]) -> np.ndarray:
        return np.concatenate([Hb @ V for (_, Hb, _, _), V in zip(self.blocks, Vs)], axis=1)

    def back(self, dE: np.ndarray, Vs: list[np.ndarray]) -> list[np.ndarray]:
        out, off = [], 0
        for (_, Hb, _, _), V in zip(self.blocks, Vs):
            c = V.shape[1]
            out.append(Hb.T @ dE[:, off : off + c])
            off += c
        return out

    # ---- constraints ------------------------------------------------------------------------
    def pair_values(self, E: np.ndarray, F: np.ndarray, a: np.ndarray, b: np.ndarray) -> np.ndarray:
        L = self.L
        EX, EG = E[self.sl_x], E[self.sl_g]
        dx, sg, dg = EX[a] - EX[b], EG[a] + EG[b], EG[a] - EG[b]
        return (
            F[self.Fidx[b]]
            - F[self.Fidx[a]]
            - L / 4 * np.einsum("ij,ij->i", dx, dx)
            + 0.5 * np.einsum("ij,ij->i", sg, dx)
            + np.einsum("ij,ij->i", dg, dg) / (4 * L)
        )

    def quad_values(self, E: np.ndarray, F: np.ndarray) -> np.ndarray:
        out = self.qlin @ F - self.qrhs
        if self.qc.size:
            t = self.qc * np.einsum("ij,ij->i", E[self.sl_u], E[self.sl_w])
            out = out + np.bincount(self.qrow, weights=t, minlength=self.nq)
        return out

    def objective(self, E: np.ndarray) -> float:
        Eo = E[self.sl_o]
        return float(np.einsum("ij,ij->", Eo, Eo) / Eo.shape[0])

    def incidence(self, a: np.ndarray, b: np.ndarray) -> tuple[sp.csr_array, sp.csr_array]:
        cols = np.arange(a.size)
        Ia = sp.csr_array((np.ones(a.size), (a, cols)), shape=(self.T, a.size))
        Ib = sp.csr_array((np.ones(b.size), (b, cols)), shape=(self.T, b.size))
        return Ia, Ib

    def grads(self, E, F, a, b, wp, wq, wo, inc=None):
        """d/dE and d/dF of ``sum wp g_pair + sum wq g_quad + wo objective``."""
        L = self.L
        dE = np.zeros_like(E)
        dF = np.zeros(self.p)
        if a.size:
            EX, EG = E[self.sl_x], E[self.sl_g]
            dx, sg, dg = EX[a] - EX[b], EG[a] + EG[b], EG[a] - EG[b]
            w = wp[:, None]
            ddx = w * (-L / 2 * dx + 0.5 * sg)
            dsg = w * (0.5 * dx)
            ddg = w * (dg / (2 * L))
            Ia, Ib = self.incidence(a, b) if inc is None else inc
            dE[self.sl_x] += Ia @ ddx - Ib @ ddx
            dE[self.sl_g] += Ia @ (dsg + ddg) + Ib @ (dsg - ddg)
            dF += np.bincount(self.Fidx[b], weights=wp, minlength=self.p)
            dF -= np.bincount(self.Fidx[a], weights=wp, minlength=self.p)
        if self.qc.size:
            c = (self.qc * wq[self.qrow])[:, None]
            dE[self.sl_u] += c * E[self.sl_w]
            dE[self.sl_w] += c * E[self.sl_u]
        dF += self.qlin.T @ wq
        Eo = E[self.sl_o]
        dE[self.sl_o] += wo * 2 * Eo / Eo.shape[0]
        return dE, dF

    def all_pairs(self) -> tuple[np.ndarray, np.ndarray]:
        a, b = np.nonzero(~np.eye(self.T, dtype=bool))
        return a, b

    def max_pair_violation(self, E, F, chunk=200_000):
        """Values of every ordered pair (chunked): returns (a, b, values) of all pairs."""
        a, b = self.all_pairs()
        vals = np.empty(a.size)
        for s in range(0, a.size, chunk):
            vals[s : s + chunk] = self.pair_values(E, F, a[s : s + chunk], b[s : s + chunk])
        return a, b, vals

    # ---- blocks and the dual slack --------------------------------------------------------------
    def block_matrices(self, Vs: list[np.ndarray]) -> list[np.ndarray]:
        return [V @ V.T for V in Vs]

    def slack(self, y_p, a, b, y_q) -> list[np.ndarray]:
        """S_b = sum_i y_i A_ib - C_b per block (a conjugate pair's projected on its structure)."""
        L, out = self.L, []
        nzp = y_p > 0
        a, b, yp = a[nzp], b[nzp], y_p[nzp]
        for kind, Hb, _, side in self.blocks:
            X, G = Hb[self.sl_x], Hb[self.sl_g]
            dx, sg, dg = X[a] - X[b], G[a] + G[b], G[a] - G[b]
            S = -L / 4 * (dx.T * yp) @ dx + 0.25 * ((sg.T * yp) @ dx + (dx.T * yp) @ sg) + (dg.T * yp) @ dg / (4 * L)
            if self.qc.size:
                c = self.qc * y_q[self.qrow]
                Uu, Ww = Hb[self.sl_u], Hb[self.sl_w]
                S += 0.5 * ((Uu.T * c) @ Ww + (Ww.T * c) @ Uu)
            Ho = Hb[self.sl_o]
            S -= Ho.T @ Ho / Ho.shape[0]
            if kind == "pair":
                h = side // 2
                D = 0.5 * (S[:h, :h] + S[h:, h:])
                Ee = 0.5 * (S[:h, h:] - S[h:, :h])
                S = np.block([[D, Ee], [-Ee, D]])
            out.append(0.5 * (S + S.T))
        return out


def _steps(md: Model, rec: dict, T: int, K: int) -> np.ndarray:
    """Node 0's evaluation t -> the first step it appears at (-1: x_*, paired with every point)."""
    steps = np.full(T, -1)
    for k in range(len(rec["g"]) - 1, -1, -1):
        t = (int(np.flatnonzero(pad(rec["g"][k][0], md.m))[0]) - md.n_inv) // md.n
        steps[t] = k
    for k in range(len(rec["fbar"]) - 1, -1, -1):
        steps[rec["fbar"][k][0] % md.per_node] = k
    return steps


def _alm(pb: _Problem, theta, ranks, a, b, lam_p, lam_q, sigma, opt, method):
    """One augmented-Lagrangian subproblem: minimise over theta with fixed multipliers."""
    inc = pb.incidence(a, b)

    def fun(th):
        Vs, F = pb.unpack(th, ranks)
        E = pb.embed(Vs)
        gp = pb.pair_values(E, F, a, b)
        gq = pb.quad_values(E, F)
        wp = np.maximum(0.0, lam_p + sigma * gp)
        wq = np.maximum(0.0, lam_q + sigma * gq)
        val = -pb.objective(E) + (np.sum(wp**2 - lam_p**2) + np.sum(wq**2 - lam_q**2)) / (2 * sigma)
        dE, dF = pb.grads(E, F, a, b, wp, wq, -1.0, inc)
        return val, pb.pack_grad(pb.back(dE, Vs), dF, ranks)

    def hessp(th, d):
        Vs, F = pb.unpack(th, ranks)
        dVs, dF = pb.unpack(d, ranks)
        E, dE = pb.embed(Vs), pb.embed(dVs)
        gp = pb.pair_values(E, F, a, b)
        gq = pb.quad_values(E, F)
        on_p = (lam_p + sigma * gp) > 0
        on_q = (lam_q + sigma * gq) > 0
        wp = np.where(on_p, lam_p + sigma * gp, 0.0)
        wq = np.where(on_q, lam_q + sigma * gq, 0.0)
        # directional derivatives of the constraints (quadratic in E, linear in F: exact differences)
        dgp = 0.5 * (pb.pair_values(E + dE, F + dF, a, b) - pb.pair_values(E - dE, F - dF, a, b))
        dgq = 0.5 * (pb.quad_values(E + dE, F + dF) - pb.quad_values(E - dE, F - dF))
        h1, _ = pb.grads(dE, dF, a, b, wp, wq, -1.0, inc)  # the curvature of each term, weights fixed
        h2, hF = pb.grads(E, F, a, b, sigma * on_p * dgp, sigma * on_q * dgq, 0.0, inc)
        return pb.pack_grad(pb.back(h1 + h2, Vs), hF, ranks)

    if method == "L-BFGS-B":
        res = minimize(
            fun,
            theta,
            jac=True,
            method="L-BFGS-B",
            options=dict(maxiter=opt["inner_iters"], gtol=opt["gtol"], ftol=opt["ftol"], maxcor=opt["maxcor"]),
        )
    else:
        res = minimize(
            fun, theta, jac=True, hessp=hessp, method=method, options=dict(maxiter=opt["inner_iters"], gtol=opt["gtol"])
        )
    if opt["verbose"]:
        print(f"    {method}: {res.nit} iterations, {res.nfev} evaluations, {res.message}")
    return res.x


def _dual_fit(pb: _Problem, Vs, F, a, b, act_p, act_q, ranks):
    """Multipliers y >= 0 on the near-active constraints that best satisfy stationarity:
    ``sum y_i grad g_i = grad objective`` (the factors and F), by bounded least squares."""
    E = pb.embed(Vs)
    cols = []
    ia, ib = a[act_p], b[act_p]
    for j in range(ia.size):
        wp = np.zeros(ia.size)
        wp[j] = 1.0
        dE, dF = pb.grads(E, F, ia, ib, wp, np.zeros(pb.nq), 0.0)
        cols.append(pb.pack_grad(pb.back(dE, Vs), dF, ranks))
    for i in np.flatnonzero(act_q):
        wq = np.zeros(pb.nq)
        wq[i] = 1.0
        dE, dF = pb.grads(E, F, ia[:0], ib[:0], np.zeros(0), wq, 0.0)
        cols.append(pb.pack_grad(pb.back(dE, Vs), dF, ranks))
    dE, dF = pb.grads(E, F, ia[:0], ib[:0], np.zeros(0), np.zeros(pb.nq), 1.0)
    target = pb.pack_grad(pb.back(dE, Vs), dF, ranks)
    J = np.array(cols).T
    nF = pb.p
    w = np.ones(J.shape[0])
    w[-nF:] = 10.0  # the function values' equations weigh more: they must hold exactly below
    res = lsq_linear(J * w[:, None], target * w, bounds=(0.0, np.inf), method="bvls" if J.shape[1] < 400 else "trf")
    y = np.zeros(a.size)
    y[np.flatnonzero(act_p)] = res.x[: ia.size]
    yq = np.zeros(pb.nq)
    yq[np.flatnonzero(act_q)] = res.x[ia.size :]
    return y, yq


def _balance(pb: _Problem, a, b, y, yq):
    """Correct y >= 0 so that ``B^T y = 0`` holds (F is free): least-norm changes on the support,
    dropping a multiplier that would turn negative, a few times."""
    for _ in range(10):
        idx = np.arange(a.size)
        Bp = sp.csr_array(
            (np.r_[np.ones(a.size), -np.ones(a.size)], (np.r_[pb.Fidx[b], pb.Fidx[a]], np.r_[idx, idx])),
            shape=(pb.p, a.size),
        )
        r = Bp @ y + pb.qlin.T @ yq
        supp_p, supp_q = np.flatnonzero(y > 0), np.flatnonzero(yq > 0)
        A = sp.hstack([Bp[:, supp_p], pb.qlin.T[:, supp_q]]).toarray()
        d = np.linalg.lstsq(A, -r, rcond=None)[0]
        y2, yq2 = y.copy(), yq.copy()
        y2[supp_p] += d[: supp_p.size]
        yq2[supp_q] += d[supp_p.size :]
        if np.all(y2 >= 0) and np.all(yq2 >= 0):
            return y2, yq2, float(np.abs(Bp @ y2 + pb.qlin.T @ yq2).max())
        y, yq = np.maximum(y2, 0.0), np.maximum(yq2, 0.0)
    return y, yq, float(np.abs(Bp @ y + pb.qlin.T @ yq).max())


def solve_lowrank(md: Model, rec: dict, group: NodeGroup, L: float, K: int, options: dict) -> tuple:
    """Solve the reduced SDP of a :func:`.formulation.build_structured` model by factors.
    Returns (lower, upper, status, full Gram matrix, all function values, constraints, block
    sides, :class:`Bounds`)."""
    opt = check_options(options)
    t0 = time.perf_counter()
    pb = _Problem(md, rec, group, L, K)
    rng = np.random.default_rng(opt["seed"])
    nb = len(pb.blocks)
    ranks = [min(opt["rank"], side) for (_, _, _, side) in pb.blocks]
    theta = np.concatenate(
        [rng.standard_normal(side * r * k) * 0.1 for side, r, k in pb.shapes(ranks)] + [np.zeros(pb.p)]
    )
    A_all, B_all = pb.all_pairs()
    st = pb.steps
    near = (np.abs(st[A_all] - st[B_all]) <= 1) | (st[A_all] < 0) | (st[B_all] < 0)
    act = near.copy()
    lam_all = np.zeros(A_all.size)
    lam_q = np.zeros(pb.nq)
    sigma = 10.0
    say = print if opt["verbose"] else (lambda *a, **k: None)
    upper = lmin = None
    rounds = 0
    prev = np.inf
    for rounds in range(1, opt["rounds"] + 1):
        a, b = A_all[act], B_all[act]
        lam_p = lam_all[act]
        for _ in range(opt["alm_iters"]):
            method = "L-BFGS-B" if prev > opt["switch"] else opt["method"]
            theta = _alm(pb, theta, ranks, a, b, lam_p, lam_q, sigma, opt, method)
            Vs, F = pb.unpack(theta, ranks)
            E = pb.embed(Vs)
            scale = _scale(E)
            gp, gq = pb.pair_values(E, F, a, b), pb.quad_values(E, F)
            viol = max(float(np.max(gp, initial=-np.inf)), float(np.max(gq))) / scale
            lam_p = np.maximum(0.0, lam_p + sigma * gp)
            lam_q = np.maximum(0.0, lam_q + sigma * gq)
            if viol <= opt["feas_tol"]:
                break
            if viol > 0.5 * prev:
                sigma = min(5.0 * sigma, opt["max_sigma"])
            prev = viol
        lam_all[act] = lam_p
        _, _, vals = pb.max_pair_violation(E, F)
        new = (~act) & (vals > opt["feas_tol"] * scale)
        say(
            f"round {rounds}: obj {pb.objective(E):.8g} pairs {int(act.sum())} viol {viol:.1e} "
            f"new {int(new.sum())} sigma {sigma:g}"
        )
        if new.any():
            act |= new
            continue
        # dual certificate on the near-active constraints
        cand_p = vals >= -1e-5 * scale
        cand_q = gq >= -1e-5 * scale
        y, yq = _dual_fit(pb, Vs, F, A_all, B_all, cand_p, cand_q, ranks)
        y, yq, res_F = _balance(pb, A_all, B_all, y, yq)
        S = pb.slack(y, A_all, B_all, yq)
        eig = [np.linalg.eigh(Sb) for Sb in S]
        rel = [float(w[0]) / max(1.0, float(np.abs(w).max())) for w, _ in eig]
        lmin = min(rel)
        dual = float(yq @ pb.qrhs)
        upper = dual if lmin >= -opt["eig_tol"] else None
        lower = pb.objective(E)
        say(f"  lower {lower:.10g} dual {dual:.10g} lambda_min {lmin:.2e} B^T y {res_F:.1e}")
        if upper is not None:
            break
        # grow the rank along the negative eigenvectors, and go on
        grew = False
        for i in range(nb):
            w, U = eig[i]
            side, r, k = pb.shapes(ranks)[i]
            neg = np.flatnonzero(w / max(1.0, float(np.abs(w).max())) < -opt["eig_tol"])
            room = min(opt["max_rank"], side) - r
            for j in neg[: min(opt["grow"], room)]:
                grew = True
                Vs[i] = _grow(Vs[i], U[:, j], k, 1e-3 * np.sqrt(scale))
                ranks[i] += 1
        if not grew:
            break
        theta = _pack_params(pb, Vs, F, ranks)
    Vs, F = pb.unpack(theta, ranks)
    E = pb.embed(Vs)
    lower = pb.objective(E)
    _, _, vals = pb.max_pair_violation(E, F)
    gq = pb.quad_values(E, F)
    scale = _scale(E)
    maxv = max(float(vals.max(initial=-np.inf)), float(gq.max())) / scale
    Gv, Fv = _read_back(pb, md, Vs, F)
    fullv = full_violation(md, Gv, Fv, L) / scale
    gap = None if upper is None else upper - lower
    feasible = max(maxv, fullv) <= 10 * opt["feas_tol"]
    exact = bool(gap is not None and abs(gap) <= opt["rtol"] * abs(lower) and feasible)
    bounds = Bounds(
        lower=lower,
        upper=upper,
        exact=exact,
        gap=gap,
        max_violation=maxv,
        full_violation=fullv,
        lambda_min=lmin,
        rank=tuple(int(r) for r in ranks),
        pairs=int(act.sum()),
        rounds=rounds,
        seconds=time.perf_counter() - t0,
    )
    sides = tuple(int(s) for (_, _, _, s) in pb.blocks)
    status = "exact" if exact else "lower_bound"
    ncons = int(A_all.size + pb.nq)
    return lower, upper, status, Gv, Fv, ncons, sides, bounds


def _scale(E: np.ndarray) -> float:
    """The Gram's scale: the largest squared norm of a vector the constraints use (at least 1)."""
    return max(1.0, float(np.max(np.sum(E**2, axis=1))))


def _grow(V: np.ndarray, u: np.ndarray, k: int, eps: float) -> np.ndarray:
    if k == 1:
        return np.concatenate([V, eps * u[:, None]], axis=1)
    h = V.shape[0] // 2
    r = V.shape[1] // 2
    Wr, Wi = V[:h, :r], V[h:, :r]
    Wr = np.concatenate([Wr, eps * u[:h, None]], axis=1)
    Wi = np.concatenate([Wi, eps * u[h:, None]], axis=1)
    return np.block([[Wr, -Wi], [Wi, Wr]])


def _pack_params(pb: _Problem, Vs, F, ranks) -> np.ndarray:
    parts = []
    for V, (side, r, k) in zip(Vs, pb.shapes(ranks)):
        if k == 1:
            parts.append(V.ravel())
        else:
            parts += [V[:side, :r].ravel(), V[side:, :r].ravel()]
    return np.concatenate(parts + [F])


def _read_back(pb: _Problem, md: Model, Vs, F) -> tuple[np.ndarray, np.ndarray]:
    lay, m, ni = pb.lay, md.m, pb.lay.n_inv
    Gh = np.zeros((m, m))
    for b, ((_, _, coords, _), V) in enumerate(zip(pb.blocks, Vs)):
        M = V @ V.T
        if b == 0 and ni:  # the trivial block: back from the reduced x-coordinates
            q = pb.Q.shape[1]
            P = np.zeros((len(coords), M.shape[0]))
            P[:ni, :q] = pb.Q
            P[ni:, q:] = np.eye(len(coords) - ni)
            M = P @ M @ P.T
        Gh[np.ix_(coords, coords)] = M
    Fv = np.asarray(F)[np.arange(md.nF) % md.per_node]
    return unhat(Gh, lay), Fv
