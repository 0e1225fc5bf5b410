"""Consensus, stationarity, mass and weight bookkeeping.

Pure functions on node states shaped ``(n, R, d)`` (nodes, replicas,
dimension), the engine's internal layout, or ``(n, d)``.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

import numpy as np

if TYPE_CHECKING:
    from collections.abc import Iterable

    from numpy.typing import ArrayLike

__all__ = ["consensus", "total", "average"]

_CHUNK_ELEMS = 1 << 16  # ~0.5 MB temporaries: stay in cache, never a full-size copy


def consensus(Z: ArrayLike, xbar: ArrayLike) -> np.ndarray | float:
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
    rates are about). The sums run in an order that does not depend on the
    number of replicas (each node's squared norm, then the nodes in order), so
    replica r of a run gives the same bits as the run of replica r alone.

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
    sq = np.empty(Z.shape[:2])  # ||z_i - xbar||^2 per node and replica
    for a in range(0, n, per):  # blocks of nodes, each vectorised
        D = Z[a : a + per] - xbar
        D *= D
        sq[a : a + per] = D.sum(axis=-1)
    out = _sum_rows(sq) / n
    return float(out[0]) if flat else out


def _sum_rows(A):
    """Sum over the first axis, node after node, whatever the other axes.

    numpy sums an outer axis row by row, but a single column (contiguous)
    pairwise: that case is summed sequentially too, so that the bits never
    depend on the number of replicas or coordinates.
    """
    n = A.shape[0]
    A2 = A.reshape(n, -1)
    if A2.shape[1] == 1 and n > 1:
        return np.add.accumulate(A2[:, 0])[-1:].reshape(A.shape[1:])
    return A.sum(axis=0)


def total(X: np.ndarray, inbox: Iterable[np.ndarray] = ()) -> np.ndarray:
    """Sum over the node axis of X plus every inbox slot (the mass in flight).

    Works for numerators (n, R, d) and for push-sum weights (n, R). Nodes are
    added in order, so replica r gives the same bits in runs of any size.
    """
    tot = _sum_rows(X)
    for B in inbox:
        tot += _sum_rows(B)
    return tot


def average(X: np.ndarray, inbox: Iterable[np.ndarray] = ()) -> np.ndarray:
    """``xbar = (1/n) * (sum of the numerators + the mass in flight)``, shape (R, d)."""
    return total(X, inbox) / X.shape[0]
