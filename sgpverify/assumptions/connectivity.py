"""Connectivity of a schedule: the window length B of strong connectivity and the diameter.

:func:`find_B` finds the smallest B such that every window of B consecutive
steps has a strongly connected union graph (B-strong connectivity,
docs/theory.md section 1b, "Connectivity and products of mixing matrices");
:func:`diameter` measures the diameter Delta of such a union (exact up to
:data:`EXACT_DIAMETER_MAX` vertices, else an upper bound from
:func:`diameter_bounds`). :func:`pattern_edges` and :func:`union_graph` turn
matrices into the edge arrays and union graphs these work on.
"""

from __future__ import annotations

import math
from collections.abc import Callable, Sequence

import numpy as np
import scipy.sparse as sp
from scipy.sparse.csgraph import shortest_path

from ..graphs import is_strongly_connected


def pattern_edges(P: sp.sparray | sp.spmatrix) -> np.ndarray:
    """Off-diagonal positive entries of P as (src, dst) = (column, row) edges
    (int32 below 2^31 vertices: half the memory of the edge caches and unions)."""
    C = sp.coo_array(P)
    keep = (C.row != C.col) & (C.data > 0)
    dt = np.int32 if P.shape[0] < 2**31 else np.int64
    return np.stack([C.col[keep].astype(dt), C.row[keep].astype(dt)], 1)


def union_graph(N: int, edge_sets: Sequence[np.ndarray]) -> sp.csr_array:
    """Boolean adjacency matrix ``g[src, dst]`` of the union of the ``(m, 2)`` edge arrays ``edge_sets``."""
    e = np.concatenate(edge_sets) if edge_sets else np.zeros((0, 2), np.int64)
    g = sp.csr_array((np.ones(len(e), dtype=bool), (e[:, 0], e[:, 1])), shape=(N, N))
    g.sum_duplicates()
    return g


def find_B(
    N: int, edges_of: Callable[[int], np.ndarray], horizon: int, period: int | None = None
) -> tuple[int | None, list[tuple[int, int]]]:
    """Smallest B such that every window ``[lB, (l+1)B)`` within the horizon is strongly connected.

    Parameters
    ----------
    N : int
        Number of vertices.
    edges_of : callable
        ``edges_of(k)`` -> ``(m, 2)`` edge array of step k.
    horizon : int
        Steps ``0..horizon-1`` are examined; windows must fit inside.
    period : int, optional
        If given, unions are cached by the set of residues ``k mod period``.

    Returns
    -------
    (B, windows) : (int or None, list of (start, stop))
    """
    cache: dict[frozenset[int], bool] = {}

    def window_ok(a, b):
        key = frozenset(k % period for k in range(a, b)) if period else None
        if key is not None and key in cache:
            return cache[key]
        ks = sorted(key) if key is not None else range(a, b)
        ok = is_strongly_connected(N, np.concatenate([edges_of(k) for k in ks]))
        if key is not None:
            cache[key] = ok
        return ok

    for B in range(1, horizon + 1):
        windows = [(w * B, (w + 1) * B) for w in range(horizon // B)]
        if all(window_ok(a, b) for a, b in windows):
            return B, windows
    return None, []


def first_disconnected_window(
    N: int, edges_of: Callable[[int], np.ndarray], B: int, stop: int, period: int | None = None
) -> tuple[int, int] | None:
    """The first window ``[lB, (l+1)B)`` inside ``[0, stop)`` whose union graph is not strongly connected.

    Streams the windows one at a time (memory: one window's edges). For a periodic
    schedule the windows repeat with their residues ``k mod period``: only the
    ``period / gcd(B, period)`` distinct ones are examined.

    Returns
    -------
    (start, stop) or None
        The window, or None if every window is strongly connected.

    Examples
    --------
    >>> import numpy as np
    >>> ring, split = np.array([[0, 1], [1, 2], [2, 0]]), np.array([[0, 1], [1, 0]])
    >>> first_disconnected_window(3, lambda k: ring if k < 4 else split, 2, 10)  # node 2 cut off from step 4
    (4, 6)
    >>> first_disconnected_window(3, lambda k: ring if k % 3 != 2 else split, 1, 10, period=3)
    (2, 3)
    >>> first_disconnected_window(3, lambda k: ring if k % 3 != 2 else split, 2, 10, period=3) is None
    True
    """
    windows = stop // B
    if period is not None:
        windows = min(windows, period // math.gcd(B, period))
    for w in range(windows):
        a, b = w * B, (w + 1) * B
        if not is_strongly_connected(N, np.concatenate([edges_of(k) for k in range(a, b)])):
            return a, b
    return None


#: Above this many vertices the diameter is bounded, not computed exactly:
#: exact all-pairs BFS costs O(N E) per window.
EXACT_DIAMETER_MAX = 2048


def diameter_bounds(g: sp.sparray | sp.spmatrix, samples: int = 16, seed: int = 0) -> tuple[int | None, int | None]:
    """Lower and upper bounds on the diameter of a strongly connected digraph, in O(samples * E).

    Lower: the largest out-eccentricity of the sampled vertices. Upper: the
    smallest ``ecc_out(v) + ecc_in(v)`` over them (any path u -> v -> w).
    """
    N = g.shape[0]
    rng = np.random.default_rng(seed)
    src = np.unique(np.concatenate([[0], rng.choice(N, min(samples, N), replace=False)]))
    d_out = shortest_path(g, directed=True, unweighted=True, indices=src)
    d_in = shortest_path(g.T.tocsr(), directed=True, unweighted=True, indices=src)
    ecc_out, ecc_in = d_out.max(axis=1), d_in.max(axis=1)
    if not (np.all(np.isfinite(ecc_out)) and np.all(np.isfinite(ecc_in))):
        return None, None
    return int(ecc_out.max()), int((ecc_out + ecc_in).min())


def diameter(g: sp.sparray | sp.spmatrix, chunk: int = 256, vertex_transitive: bool = False) -> int | None:
    """Diameter of a strongly connected digraph given as a sparse adjacency matrix.

    Exact (BFS from every vertex, or from vertex 0 for vertex-transitive
    graphs) up to :data:`EXACT_DIAMETER_MAX` vertices; above, the upper bound
    of :func:`diameter_bounds` (the analysis needs an upper bound on Delta).
    """
    N = g.shape[0]
    if N == 1:
        return 0
    if N > EXACT_DIAMETER_MAX and not vertex_transitive:
        return diameter_bounds(g)[1]
    sources = [0] if vertex_transitive else range(N)
    best = 0
    src = np.asarray(list(sources))
    for i in range(0, len(src), chunk):
        d = shortest_path(g, directed=True, unweighted=True, indices=src[i : i + chunk])
        m = d.max()
        if not np.isfinite(m):
            return None
        best = max(best, int(m))
    return best
