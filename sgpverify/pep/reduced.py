"""The symmetry-reduced PEP: an invariant Gram matrix, block-diagonal over a group's real
characters, with the interpolation conditions of node 0 only.

Why it is exact. Let a group act on the nodes and leave every mixing matrix invariant
(:mod:`.symmetry`). It maps a run to a run: node i's iterates and gradients to node g(i)'s, x0,
the averages xbar^k and x_* to themselves. The class of functions and the measure are invariant
(the heterogeneity and gradient-size bounds and the measure are averages over nodes), so the
group average of a feasible Gram matrix and function values is feasible with the same value: the
SDP may be restricted to invariant solutions. Then

* the Gram entry of node i's family-t gradient and node j's family-u gradient depends on
  ``j - i`` only, so the real character basis (cos/sin vectors of each character) makes the
  Gram matrix block-diagonal: one block per real character (side T, the number of families;
  the trivial one also holds x0 and x_*) and one per conjugate pair of side 2T with the
  structure ``[[A, -B], [B, A]]`` (A symmetric, B antisymmetric: a Hermitian ``A + iB`` in real
  form);
  A pair's block is a plain PSD variable M of side 2T whose constraints and objective see
  only its part that commutes with ``J = [[0, -I], [I, 0]]`` (their coefficient matrices are
  projected so): that part of any feasible M is feasible, PSD, of the same value, and is the
  invariant solution read back. Stating the structure as equalities instead (or through
  ``A`` and ``B`` variables) leaves free directions in the dual, where Clarabel stalls at a
  relative gap of a few 1e-8 ("AlmostSolved") on cyclic schedules;
* f_{g(i)} at g(point) equals f_i at point, so the function values are node 0's, and node i's
  interpolation conditions are node 0's moved by the group: only node 0's are kept.

Colla and Hendrickx ("Exploiting agent symmetries", arXiv 2403.11724) make the same argument for
agents equivalent under every permutation; here the group is that of the schedule.
"""

from __future__ import annotations

import numpy as np
import scipy.sparse as sp

from .formulation import Model, pad
from .posterior import check_first_order
from .solve import maximize_measure
from .symmetry import NodeGroup

_SQRT2 = float(np.sqrt(2.0))


class Layout:
    """Coordinates of each block in the character basis, and the variable vector's slices."""

    def __init__(self, md: Model, group: NodeGroup, stationary: bool) -> None:
        n, T, n_inv = md.n, md.T, md.n_inv
        self.n, self.T, self.n_inv = n, T, n_inv
        self.V, blocks = group.real_characters()
        keep = list(range(T - 1)) if stationary else list(range(T))  # the gradients at x_* sum to 0
        self.blocks = []  # (kind, hat coordinates, slice of the variable vector, side)
        off = 0
        for b, (kind, cols) in enumerate(blocks):
            fam = [[n_inv + t * n + c for t in (keep if b == 0 else range(T))] for c in cols]
            coords = (list(range(n_inv)) if b == 0 else []) + sum(fam, [])
            r = len(coords)
            size = r * (r + 1) // 2
            self.blocks.append((kind, np.array(coords), slice(off, off + size), r))
            off += size
        self.n_gram = off

    def hat(self, A: np.ndarray) -> np.ndarray:
        """Rows of full coefficient vectors -> rows in the character basis."""
        A = np.atleast_2d(A)
        R = A.shape[0]
        fam = A[:, self.n_inv :].reshape(R, self.T, self.n) @ self.V
        return np.concatenate([A[:, : self.n_inv], fam.reshape(R, -1)], axis=1)

    def coefficients(self, parts: list[tuple[float, np.ndarray, np.ndarray]]) -> np.ndarray:
        """(R, n_gram): the rows ``sum_c c <a_r, b_r>_G`` as linear forms of the variable vector.
        ``parts`` holds (c, rows a, rows b) in the character basis."""
        R = parts[0][1].shape[0]
        out = np.zeros((R, self.n_gram))
        for kind, coords, sl, r in self.blocks:
            C = np.zeros((R, r, r))
            for c, a, b in parts:
                a, b = a[:, coords], b[:, coords]
                C += 0.5 * c * (np.einsum("ri,rj->rij", a, b) + np.einsum("ri,rj->rij", b, a))
            if kind == "pair":  # the part that commutes with J = [[0, -I], [I, 0]]
                T = self.T
                D = 0.5 * (C[:, :T, :T] + C[:, T:, T:])
                E = 0.5 * (C[:, :T, T:] - C[:, T:, :T])
                C = np.concatenate([np.concatenate([D, E], axis=2), np.concatenate([-E, D], axis=2)], axis=1)
            out[:, sl] = _sym_coef(C)
        return out


def _sym_coef(C: np.ndarray) -> np.ndarray:
    r = C.shape[1]
    iu, ju = np.triu_indices(r)
    return np.where(iu == ju, C[:, iu, ju], (C[:, iu, ju] + C[:, ju, iu]) / _SQRT2)


def _sym_map(r: int) -> sp.csr_array:
    """(r*r, r(r+1)/2) sparse: the upper-triangle vector -> the symmetric (r, r) matrix
    (row-major); off-diagonal entries are stored times sqrt(2) (the isometric svec scaling,
    which keeps the solver's scaling even)."""
    iu, ju = np.triu_indices(r)
    k = np.arange(iu.size)
    off = iu != ju
    rows = np.concatenate([iu * r + ju, (ju * r + iu)[off]])
    cols = np.concatenate([k, k[off]])
    vals = np.concatenate([np.where(off, 1 / _SQRT2, 1.0), np.full(int(off.sum()), 1 / _SQRT2)])
    return sp.csr_array((vals, (rows, cols)), shape=(r * r, iu.size))


def solve_reduced(
    md: Model, rec: dict, group: NodeGroup, L: float, K: int, measure: str, solver: str, solver_options: dict
) -> tuple:
    """Solve the reduced SDP of a :func:`.formulation.build_structured` model. Returns (primal,
    dual, status, full Gram matrix, all function values, scalar constraints, block sides, check).
    With SCS (a first-order solver), ``check`` is the a-posteriori :class:`.posterior.Check` of the
    solution, ``dual`` its certified bound and ``status`` "optimal" only where it passed; else None."""
    import cvxpy as cp

    lay = Layout(md, group, md.n_inv == 2)
    m, p = md.m, md.per_node
    # interpolation of node 0: f_b - f_a - L/4 |dx|^2 + 1/2 <ga+gb, dx> + 1/(4L) |ga-gb|^2 <= 0
    ev = md.evals[0]
    Xp = lay.hat(np.array([pad(x, m) for x, _, _ in ev]))
    Gp = lay.hat(np.array([pad(g, m) for _, g, _ in ev]))
    Fp = np.array([f % p for _, _, f in ev])
    a, b = np.nonzero(~np.eye(len(ev), dtype=bool))
    DX, SG, DG = Xp[a] - Xp[b], Gp[a] + Gp[b], Gp[a] - Gp[b]
    rows = [lay.coefficients([(-L / 4, DX, DX), (0.5, SG, DX), (1 / (4 * L), DG, DG)])]
    Fr = [
        sp.csr_array(
            (
                np.r_[np.ones(a.size), -np.ones(a.size)],
                (np.r_[np.arange(a.size), np.arange(a.size)], np.r_[Fp[b], Fp[a]]),
            ),
            shape=(a.size, p),
        )
    ]
    rhs = [np.zeros(a.size)]
    for (terms, lin), r in zip(md.quad, md.rhs):
        if terms:
            parts = [(c, lay.hat(pad(u, m)), lay.hat(pad(v, m))) for c, u, v in terms]
            rows.append(lay.coefficients(parts))
        else:
            rows.append(np.zeros((1, lay.n_gram)))
        f = np.zeros((1, p))
        for j, c in lin.items():
            f[0, j % p] += c
        Fr.append(sp.csr_array(f))
        rhs.append(np.array([r]))
    A = sp.csr_array(np.vstack(rows))
    Bf = sp.vstack(Fr).tocsr()
    z = cp.Variable(lay.n_gram)
    F = cp.Variable(p)
    rhs = np.concatenate(rhs)
    cons = [A @ z + Bf @ F <= rhs]
    mats = []
    for _kind, _, sl, r in lay.blocks:
        M = cp.reshape(_sym_map(r) @ z[sl], (r, r), order="C")
        cons.append(M >> 0)
        mats.append(M)
    gb = lay.hat(np.array([np.mean([pad(u, m) for u in g], axis=0) for g in rec["gbar"][:K]]))
    Mq = lay.coefficients([(1.0, gb, gb)])
    prob, dual = maximize_measure(Mq, z, measure, cons, solver, solver_options)
    sides = tuple(r for _, _, _, r in lay.blocks)
    ncons = A.shape[0] + (K if measure == "min" else 0)
    if z.value is None or F.value is None:
        return prob.value, dual, str(prob.status), None, None, ncons, sides, None
    Gh = np.zeros((m, m))
    for (kind, coords, _, r), M in zip(lay.blocks, mats):
        Mv = np.asarray(M.value)
        if kind == "pair":  # the invariant solution: M's part that commutes with J
            T = r // 2
            D = 0.5 * (Mv[:T, :T] + Mv[T:, T:])
            E = 0.5 * (Mv[:T, T:] - Mv[T:, :T])
            Mv = np.block([[D, E], [-E, D]])
        Gh[np.ix_(coords, coords)] = Mv
    Gv = unhat(Gh, lay)
    Fv = np.asarray(F.value)[np.arange(md.nF) % p]
    status, check = str(prob.status), None
    if solver == "SCS":
        blocks = [(sl, _to_matrix(r)) for _, _, sl, r in lay.blocks]
        zv, Fz = np.asarray(z.value), np.asarray(F.value)
        status, dual, check = check_first_order(prob, cons, measure, Mq, A, Bf, rhs, zv, Fz, blocks, md, Gv, Fv, L)
    return prob.value, dual, status, Gv, Fv, ncons, sides, check


def _to_matrix(r: int):
    S = _sym_map(r)
    return lambda v: (S @ v).reshape(r, r)


def unhat(Gh: np.ndarray, lay: Layout) -> np.ndarray:
    """The Gram matrix in the original basis: ``W Gh W^T`` with ``W = diag(I, I_T (x) V)``."""
    n_inv, T, n, V = lay.n_inv, lay.T, lay.n, lay.V
    G = np.empty_like(Gh)
    G[:n_inv, :n_inv] = Gh[:n_inv, :n_inv]
    cross = Gh[:n_inv, n_inv:].reshape(n_inv, T, n) @ V.T
    G[:n_inv, n_inv:] = cross.reshape(n_inv, -1)
    G[n_inv:, :n_inv] = G[:n_inv, n_inv:].T
    ff = Gh[n_inv:, n_inv:].reshape(T, n, T, n)
    ff = np.einsum("ic,tcud,jd->tiuj", V, ff, V, optimize=True)
    G[n_inv:, n_inv:] = ff.reshape(T * n, T * n)
    return G
