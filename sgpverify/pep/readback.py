"""The worst-case functions read back from a solved PEP, as a Problem-protocol object."""

from __future__ import annotations

import math
from typing import Any

import numpy as np

from .formulation import pad


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

    def __init__(self, wc: Any, rtol: float = 1e-7) -> None:
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
            Xp = np.array([Y @ pad(x, m) for x, _, _ in ev])
            Gp = np.array([Y @ pad(g, m) for _, g, _ in ev])
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
