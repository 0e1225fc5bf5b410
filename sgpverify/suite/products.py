"""Dense products of the mixing matrices at suite sizes: the constants the bounds need."""

from __future__ import annotations

import math
from typing import TYPE_CHECKING, Any

import numpy as np

from .. import mixing
from .criteria import EPS

if TYPE_CHECKING:
    from ..graphs import Topology

__all__ = ["product_constants", "ENVELOPE_FLOOR"]


#: Deviations at or below this are round-off (entries of the products are in [0, 1]).
ENVELOPE_FLOOR = 1e3 * EPS


def product_constants(
    topo: Topology,
    tau: int,
    delay: str,
    seed: int | np.random.SeedSequence | None,
    horizon: int,
    starts: int = 8,
    max_rows: int = 1024,
) -> dict[str, Any]:
    """Measured constants of the products of the mixing matrices, for the bounds.

    For starts s (one period apart for periodic schedules, spread over the
    horizon otherwise) and every lag t = 1..horizon, with ``P^(s+t-1:s)`` the
    product of t (delay-augmented) matrices and ``w`` the push-sum weights:

    - ``dev_inf[t]``: max over s, i, j of ``|P^(s+t-1:s)_ij - phi_i|`` with
      ``phi = w^(s+t) / n`` (the entrywise deviation of the product lemma);
    - ``dev_2[t]``: max over s of the spectral norm of
      ``M = P^(s+t-1:s)[:n, :n] - w^(s+t)_real 1^T / n`` (docs/theory.md, bound b2);
    - ``S2``: sum of ``dev_2``, plus a geometric tail from the last tenth of the
      horizon (``q_tail``);
    - ``q_exact_dense``: for periodic schedules with deterministic delays, the
      spectral radius of the period product on the disagreement subspace, to
      the power 1/period; None otherwise.

    ``dev_inf`` is reported so that the envelope :func:`sgpverify.check_mixing`
    computes can be held against these dense products (tests/test_suite.py).
    """
    S = mixing.mixing_schedule(topo, tau=tau, delay=delay, seed=seed)
    n, N = S.n, S.N
    if N > max_rows:
        return {"S2": None, "q_exact_dense": None, "product_note": f"rows {N} > {max_rows}: not computed (dense)"}
    per = S.period
    step = per if per else max(1, horizon // starts)
    total = (starts - 1) * step + horizon + 1
    mats = [S.matrix(k).toarray() for k in range(total)]
    w = np.zeros((total + 1, N))
    w[0, :n] = 1.0
    for k in range(total):
        w[k + 1] = mats[k] @ w[k]
    dev_inf = np.zeros(horizon + 1)
    dev_2 = np.zeros(horizon + 1)
    for si in range(starts):
        s = si * step
        Pi = np.eye(N)[:, :n]
        for t in range(1, horizon + 1):
            Pi = mats[s + t - 1] @ Pi
            wk = w[s + t]
            dev_inf[t] = max(dev_inf[t], float(np.max(np.abs(Pi - wk[:, None] / n))))
            M = Pi[:n] - wk[:n, None] / n
            dev_2[t] = max(dev_2[t], float(np.linalg.norm(M, 2)))
    q_exact = None
    if per and (S.model is None or not S.model.random or tau == 0):
        Pp = np.eye(N)
        for k in range(per):
            Pp = mats[k] @ Pp
        ev = np.sort(np.abs(np.linalg.eigvals(Pp)))[::-1]
        q_exact = float(ev[1] ** (1.0 / per)) if N > 1 else 0.0
    # geometric tail rate from the last tenth of the horizon (both series)
    tail = max(2, horizon // 10)

    def rate(dev):
        a, b = dev[horizon - tail], dev[horizon]
        if b <= ENVELOPE_FLOOR:
            return 0.0
        return float(min(1.0, (b / a) ** (1.0 / tail))) if a > 0 else 1.0

    q_tail = rate(dev_2)
    S2 = float(dev_2[1:].sum() + (dev_2[horizon] * q_tail / (1 - q_tail) if q_tail < 1 else math.inf))
    return {
        "S2": S2,
        "q_tail": q_tail,
        "q_exact_dense": q_exact,
        "dev_inf": dev_inf[1:].tolist(),
        "dev_2": dev_2[1:].tolist(),
        "product_starts": starts,
        "product_horizon": horizon,
    }
