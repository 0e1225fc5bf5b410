"""Consensus, stationarity, mass and weight bookkeeping.

Pure functions on node states shaped ``(n, R, d)`` (nodes, replicas,
dimension), the engine's internal layout, or ``(n, d)``.
"""

from __future__ import annotations

import numpy as np

__all__ = ["consensus", "total", "average"]

_CHUNK_ELEMS = 1 << 16  # ~0.5 MB temporaries: stay in cache, never a full-size copy


def consensus(Z, xbar):
    """``(1/n) sum_i ||z_i - xbar||^2`` for each replica.

    Parameters
    ----------
    Z : ndarray, shape (n, R, d) or (n, d)
    xbar : ndarray, shape (R, d) or (d,)

    Returns
    -------
    ndarray of shape (R,), or a float for 2-D input.

    Computed by blocks of nodes as an explicit difference (no expansion of the
    square, whose cancellation would lose the small consensus errors that the
    rates are about).

    Examples
    --------
    >>> import numpy as np
    >>> consensus(np.array([[0.0, 0.0], [2.0, 0.0]]), np.array([1.0, 0.0]))
    1.0
    """
    Z = np.asarray(Z, dtype=float)
    xbar = np.asarray(xbar, dtype=float)
    flat = Z.ndim == 2
    if flat:
        Z, xbar = Z[:, None, :], xbar[None, :]
    n = Z.shape[0]
    per = max(1, _CHUNK_ELEMS // max(1, Z.shape[1] * Z.shape[2]))
    acc = np.zeros(Z.shape[1])
    for a in range(0, n, per):  # blocks of nodes, each vectorised
        D = Z[a : a + per] - xbar
        acc += np.einsum("nrd,nrd->r", D, D)
    out = acc / n
    return float(out[0]) if flat else out


def total(X, inbox=()):
    """Sum over the node axis of X plus every inbox slot (the mass in flight).

    Works for numerators (n, R, d) and for push-sum weights (n, R).
    """
    tot = X.sum(axis=0)
    for B in inbox:
        tot += B.sum(axis=0)
    return tot


def average(X, inbox=()):
    """``xbar = (1/n) * (sum of the numerators + the mass in flight)``, shape (R, d)."""
    return total(X, inbox) / X.shape[0]
