"""Which interpolation constraints the exact worst case uses, and the rank of its Gram matrix.

The reduced SDP of ``sgpverify.pep.worst_case`` keeps node 0's smooth-nonconvex interpolation
constraints over every ordered pair of its evaluation points (the average iterate xbar^k and the
node's de-biased iterate z_0^k, k <= K: about 2K points, 4K^2 pairs): at large K those pairs, not the
Gram size, grow fastest. This script solves the reduced SDP on the exponential graph at (n, K) pairs
and reports, at the solution read back as a full Gram matrix:

- how many of node 0's constraints are active (slack within ``tol`` of the Gram's scale), and how
  the active ones lie: between points of the same step or neighbouring steps (|k_a - k_b| <= 1), or
  further apart, and of which kinds (xbar or z);
- the numerical rank of the Gram matrix (eigenvalues above 1e-8 of the largest), beside its side.

    .venv/bin/python benchmarks/pep_active.py                 # n:K = 4:8 4:16 8:8 (about a minute)
    .venv/bin/python benchmarks/pep_active.py --cases 4:24 --tol 1e-6

A constraint that is inactive at the optimum can be dropped without changing the optimum only if the
solution of the smaller SDP satisfies it again (constraint generation checks this at each step);
dropping constraints by itself gives a relaxation, whose value bounds the worst case from above.
"""

from __future__ import annotations

import argparse
import math
import time
import warnings
from collections import Counter

import numpy as np

import sgpverify as sv
from sgpverify import pep
from sgpverify.pep.formulation import pad


def _labels(md, rec, n_inv, n):
    """Node 0's evaluation t -> (kind, k): kind "xbar" or "z" (the first step it appears at)."""
    lab = {}
    for k, fams in enumerate(rec["fbar"]):
        lab.setdefault(fams[0], ("xbar", k))
    for k, gs in enumerate(rec["g"]):
        t = (int(np.flatnonzero(pad(gs[0], md.m))[0]) - n_inv) // n
        lab.setdefault(t, ("z", k))
    return lab


def analyse(n: int, K: int, tol: float) -> dict:
    warnings.simplefilter("ignore")
    t0 = time.perf_counter()
    wc = pep.worst_case(sv.graphs.exponential(n), K, L=1.0, step_size=min(math.sqrt(n / K), 1.0), zeta2=1.0)
    secs = time.perf_counter() - t0
    md, rec = wc._model
    G, F, m = wc.gram, md.F, md.m
    scale = float(np.abs(G).max())
    ev = md.evals[0]
    Xp = np.array([pad(x, m) for x, _, _ in ev])
    Gp = np.array([pad(g, m) for _, g, _ in ev])
    Fp = np.array([f for _, _, f in ev])
    a, b = np.nonzero(~np.eye(len(ev), dtype=bool))

    def ip(u, v):
        return np.einsum("ri,ij,rj->r", u, G, v)

    DX, SG, DG = Xp[a] - Xp[b], Gp[a] + Gp[b], Gp[a] - Gp[b]
    L = 1.0
    lhs = F[Fp[b]] - F[Fp[a]] - L / 4 * ip(DX, DX) + 0.5 * ip(SG, DX) + ip(DG, DG) / (4 * L)
    active = lhs >= -tol * scale
    lab = _labels(md, rec, md.n_inv, n)
    near = Counter()
    for i, j in zip(a[active], b[active]):
        (ka, sa), (kb, sb) = lab.get(int(i), ("x*", K)), lab.get(int(j), ("x*", K))  # x*: the stationary point
        gap = abs(sa - sb)
        near[f"{ka}-{kb} " + ("same step" if gap == 0 else "next step" if gap == 1 else "further")] += 1
    eig = np.linalg.eigvalsh(0.5 * (G + G.T))
    rank = int(np.sum(eig > 1e-8 * eig.max()))
    return dict(
        n=n,
        K=K,
        seconds=secs,
        value=wc.value,
        points=len(ev),
        pairs=int(a.size),
        active=int(active.sum()),
        max_violation=float(lhs.max() / scale),
        pattern=dict(sorted(near.items())),
        gram=int(G.shape[0]),
        rank=rank,
    )


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--cases", nargs="+", default=["4:8", "4:16", "8:8"], help="n:K pairs")
    ap.add_argument("--tol", type=float, default=1e-6, help="active: slack within tol x the Gram's largest entry")
    args = ap.parse_args()
    for case in args.cases:
        n, K = (int(v) for v in case.split(":"))
        r = analyse(n, K, args.tol)
        print(
            f"n={r['n']} K={r['K']}: worst case {r['value']:.6g} in {r['seconds']:.1f} s; "
            f"node 0: {r['points']} points, {r['active']} of {r['pairs']} pair constraints active "
            f"(largest violation {r['max_violation']:.1e} of "
            f"scale); Gram side {r['gram']}, numerical rank {r['rank']}"
        )
        for k, v in r["pattern"].items():
            print(f"    {k}: {v}")


if __name__ == "__main__":
    main()
