"""The symbolic run of SGP behind the PEP: every iterate and gradient as a coefficient vector
over a Gram basis (x0, the gradients the nodes evaluate, x_*), and the scalar constraints of the
class of functions (module notes of :mod:`sgpverify.pep`).

:func:`build` allocates a leaf per new gradient evaluation, in the order of the run, and shares
leaves between equal points; :func:`build_structured` lays the basis out by families (one leaf
per node and per evaluation point of node 0), the layout the symmetry-reduced SDP needs.
"""

from __future__ import annotations

import numpy as np

from ..mixing import MixingSchedule


class Model:
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
            if same_point(xe, x):
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


def same_point(a: np.ndarray, b: np.ndarray) -> bool:
    k = min(a.size, b.size)
    return bool(np.array_equal(a[:k], b[:k]) and not np.any(a[k:]) and not np.any(b[k:]))


def close_point(a: np.ndarray, b: np.ndarray, rtol: float) -> bool:
    """Whether two coefficient vectors (zero-padded to one length) agree to ``rtol`` times the
    larger's largest entry."""
    k = max(a.size, b.size)
    a, b = pad(a, k), pad(b, k)
    return bool(np.max(np.abs(a - b)) <= rtol * max(np.max(np.abs(a)), np.max(np.abs(b))))


def pad(v: np.ndarray, m: int) -> np.ndarray:
    return np.pad(v, (0, m - v.size)) if v.size < m else v


def build(
    schedule: MixingSchedule,
    K: int,
    L: float,
    gamma: float,
    delta: float,
    zeta2: float | None,
    G2sq: float | None,
    fstar: str,
) -> tuple[Model, dict]:
    n, N = schedule.n, schedule.N
    md = Model(n)
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
        G = np.array([pad(g, m) for g, _ in gs])
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
            md.add([(1.0 / n, pad(g, m), pad(g, m)) for g in gz], {}, G2sq, "gradient size")
        Gk = np.zeros((N, m))
        for i, g in enumerate(gz):
            Gk[i] = pad(g, m)
        X = np.pad(X, ((0, 0), (0, m - X.shape[1])))
        P = schedule.matrix(k).toarray()
        X = P @ (X - gamma * Gk)
        w = P @ w
    f0 = {f: 1.0 / n for f in rec["fbar"][0]}
    if fstar == "stationary":
        xs = md.leaf()
        gstar = [md.evaluate(i, xs)[0] for i in range(n - 1)]
        m = md.m
        last = -np.sum([pad(g, m) for g in gstar], axis=0) if gstar else np.zeros(m)
        gstar.append(md.evaluate(n - 1, pad(xs, m), grad=last)[0])
        fs = [md.evals[i][-1][2] for i in range(n)]
        heterogeneity([(g, None) for g in gstar])
        rec["lower"] = initial_condition(md, rec, f0, {f: 1.0 / n for f in fs}, n, K, delta)
    else:
        rec["lower"] = initial_condition(md, rec, f0, None, n, K, delta)
    # interpolation: L-smooth, f_a - f_b >= -L/4 |xa-xb|^2 + 1/2 <ga+gb, xa-xb> + 1/(4L) |ga-gb|^2
    return md, rec


def initial_condition(md: Model, rec: dict, f0: dict, fsd: dict | None, n: int, K: int, delta: float) -> dict:
    """Add ``f(x^0) - lower <= delta`` to ``md`` and return ``lower``: with ``fsd`` (the average of
    the f_i at x_*, a stationary measure) f_* itself, held below every ``f(xbar^k)``; without it,
    ``f(xbar^{K-1})``."""
    if fsd is not None:
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
    return lower


def interpolation_rows(md: Model) -> list[tuple[np.ndarray, np.ndarray, np.ndarray, np.ndarray]]:
    """Per function: (DX, SG, DG, pairs) over ordered pairs a != b of its evaluations."""
    m = md.m
    out = []
    for ev in md.evals:
        p = len(ev)
        if p < 2:
            continue
        Xp = np.array([pad(x, m) for x, _, _ in ev])
        Gp = np.array([pad(g, m) for _, g, _ in ev])
        Fp = np.array([f for _, _, f in ev])
        a, b = np.nonzero(~np.eye(p, dtype=bool))
        out.append((Xp[a] - Xp[b], Gp[a] + Gp[b], Gp[a] - Gp[b], np.stack([Fp[a], Fp[b]], axis=1)))
    return out


def full_violation(md: Model, G: np.ndarray, F: np.ndarray, L: float) -> float:
    """The largest ``lhs - rhs`` of EVERY constraint of the full SDP (every node's interpolation
    pairs, the averages) at a full Gram matrix and function values: a check independent of the
    factors' own bookkeeping."""
    m, worst = md.m, -np.inf
    for ev in md.evals:  # through the T x T Gram matrices of each node's points and gradients
        Xp = np.array([pad(x, m) for x, _, _ in ev])
        Gp = np.array([pad(g, m) for _, g, _ in ev])
        Fp = F[np.array([f for _, _, f in ev])]
        Pxx, Pxg, Pgg = Xp @ G @ Xp.T, Xp @ G @ Gp.T, Gp @ G @ Gp.T  # Pxg[i, j] = <x_i, g_j>
        dxx, dgg, dxg = np.diag(Pxx), np.diag(Pgg), np.diag(Pxg)
        # rows a, columns b: f_b - f_a - L/4 |xa-xb|^2 + 1/2 <ga+gb, xa-xb> + 1/(4L) |ga-gb|^2
        lhs = (
            Fp[None, :]
            - Fp[:, None]
            - L / 4 * (dxx[:, None] + dxx[None, :] - 2 * Pxx)
            + 0.5 * (dxg[:, None] - Pxg.T + Pxg - dxg[None, :])
            + (dgg[:, None] + dgg[None, :] - 2 * Pgg) / (4 * L)
        )
        np.fill_diagonal(lhs, -np.inf)
        worst = max(worst, float(lhs.max()))
    for (terms, lin), r in zip(md.quad, md.rhs):
        v = sum(c * pad(a, m) @ G @ pad(b, m) for c, a, b in terms) + sum(c * F[j] for j, c in lin.items())
        worst = max(worst, float(v - r))
    return worst


def gbar(gs: list[np.ndarray], m: int, n: int) -> np.ndarray:
    return np.sum([pad(g, m) for g in gs], axis=0) / n


def quad_vec(a: np.ndarray, m: int) -> np.ndarray:
    a = pad(a, m)
    return np.outer(a, a).ravel()


def build_structured(
    schedule: MixingSchedule,
    K: int,
    L: float,
    gamma: float,
    delta: float,
    zeta2: float | None,
    G2sq: float | None,
    fstar: str,
) -> tuple[Model, dict]:
    """The run of :func:`build` on a basis laid out by families: vector ``j < n_inv`` is x0
    (then x_* for ``fstar="stationary"``), and leaf ``n_inv + t n + i`` is node i's gradient at
    its t-th evaluation point (family t). Every node evaluates its f_i at points that correspond
    under the schedule's symmetry, in the same order: evaluation t of node i has value index
    ``i T + t``. A point of node 0 equal to one it evaluated before shares that family on every
    node; equal means equal coefficients up to the round-off of K steps of N-term sums
    (``|x - y|_inf <= 4 eps (K + 1) N max(|x|_inf, |y|_inf)``), so that a point equal in exact
    arithmetic (``z_i^k = xbar^k`` under exact averaging) is one point: two points at a
    round-off's distance would be a degenerate pair for the solver. With
    ``fstar="stationary"`` the last family is the gradients at x_*, whose sum the reduced SDP
    sets to zero (it drops their trivial character)."""
    n, N = schedule.n, schedule.N
    stationary = fstar == "stationary"
    n_inv = 1 + stationary
    tol = 4 * np.finfo(float).eps * (K + 1) * N
    md = Model(n)
    md.m = n_inv
    md.n_inv = n_inv

    def family(points):
        """A new family: node i evaluates at points[i]; returns (gradients, value indices)."""
        t = len(md.evals[0])
        md.m += n
        gs = []
        for i in range(n):
            g = np.zeros(md.m)
            g[n_inv + t * n + i] = 1.0
            md.evals[i].append((points[i].copy(), g, t))  # value index fixed below (i T + t)
            gs.append(g)
        return gs, t

    def at(points):
        for t, (x, _, _) in enumerate(md.evals[0]):
            if close_point(x, points[0], tol):
                return [md.evals[i][t][1] for i in range(n)], t
        return family(points)

    def heterogeneity(gs):
        if zeta2 is None:
            return
        G = np.array([pad(g, md.m) for g in gs])
        gb = G.mean(axis=0)
        md.add([(1.0 / n, g - gb, g - gb) for g in G], {}, zeta2, "heterogeneity")

    rec = {"xbar": [], "gbar": [], "fbar": [], "z": [], "g": []}
    X = np.zeros((N, md.m))
    X[:n, 0] = 1.0
    w = np.zeros(N)
    w[:n] = 1.0
    for k in range(K + 1):
        xb = X.sum(axis=0) / n
        gs, t = at([xb] * n)
        heterogeneity(gs)
        rec["xbar"].append(xb)
        rec["gbar"].append(gs)
        rec["fbar"].append(t)
        if k == K:
            break
        zs = [X[i] / w[i] for i in range(n)]
        gz, _ = at(zs)
        rec["z"].append(zs)
        rec["g"].append(gz)
        m = md.m
        if G2sq is not None:
            md.add([(1.0 / n, pad(g, m), pad(g, m)) for g in gz], {}, G2sq, "gradient size")
        X = np.pad(X, ((0, 0), (0, m - X.shape[1])))
        Gk = np.zeros((N, m))
        Gk[:n] = np.array([pad(g, m) for g in gz])
        P = schedule.matrix(k).toarray()
        X = P @ (X - gamma * Gk)
        w = P @ w
    if stationary:
        xs = np.zeros(md.m)
        xs[1] = 1.0
        hs, ts = family([xs] * n)
    T = len(md.evals[0])
    md.T, md.per_node, md.nF = T, T, n * T
    for i in range(n):
        md.evals[i] = [(x, g, i * T + t) for x, g, t in md.evals[i]]
    rec["fbar"] = [[i * T + t for i in range(n)] for t in rec["fbar"]]
    f0 = {f: 1.0 / n for f in rec["fbar"][0]}
    if stationary:
        heterogeneity(hs)
        rec["lower"] = initial_condition(md, rec, f0, {i * T + ts: 1.0 / n for i in range(n)}, n, K, delta)
    else:
        rec["lower"] = initial_condition(md, rec, f0, None, n, K, delta)
    return md, rec
