"""Classic static (and two-step) topologies: rings, complete, hypercube, torus, star, networkx graphs.

Examples
--------
>>> ring(5, bidirectional=True).out_degree(0).tolist()
[2, 2, 2, 2, 2]
"""

from __future__ import annotations

import networkx as nx
import numpy as np

from ..validation import check_int
from .base import EMPTY_EDGES, PeriodicTopology, edges_from_offsets

__all__ = ["ring", "complete", "hypercube", "torus", "star", "from_networkx"]


def ring(n: int, bidirectional: bool = False, alternating: bool = False) -> PeriodicTopology:
    """Directed ring ``i -> i+1`` (and ``i -> i-1`` if bidirectional).

    With ``alternating=True``, the authors' ``RingGraph`` with one peer per
    step: ``i -> i+1`` at even steps and ``i -> i-1`` at odd steps (period 2).
    The default is static; ``bidirectional=True`` is the authors' ring with
    two peers per step.

    Examples
    --------
    >>> ring(4).edges(0).tolist()
    [[0, 1], [1, 2], [2, 3], [3, 0]]
    >>> ring(4, alternating=True).edges(1).tolist()
    [[0, 3], [1, 0], [2, 1], [3, 2]]
    """
    n = check_int("nodes", n, min_value=1)
    if alternating:
        if bidirectional:
            raise ValueError("alternating applies to the one-peer ring, got bidirectional=True")
        rounds = ((1 % n,), ((-1) % n,)) if n > 2 else ((1 % n,),)
        rounds = tuple(r if r != (0,) else () for r in rounds)
        return PeriodicTopology(
            n, [edges_from_offsets(n, r) for r in rounds], name=f"ring-alternating(n={n})", offsets=rounds
        )
    offs = (1, n - 1) if bidirectional else (1,)
    kind = "ring-bidir" if bidirectional else "ring"
    return PeriodicTopology(n, [edges_from_offsets(n, offs)], name=f"{kind}(n={n})", offsets=(offs,))


def complete(n: int) -> PeriodicTopology:
    """Static complete digraph: every node sends to every other node.

    Examples
    --------
    >>> len(complete(5).edges(0))
    20
    """
    n = check_int("nodes", n, min_value=1)
    offs = tuple(range(1, n))
    return PeriodicTopology(n, [edges_from_offsets(n, offs)], name=f"complete(n={n})")


def hypercube(n: int) -> PeriodicTopology:
    """Static hypercube: ``i <-> i XOR 2**b`` for every bit b (n a power of two).

    Examples
    --------
    >>> hypercube(4).edges(0).tolist()
    [[0, 1], [0, 2], [1, 0], [1, 3], [2, 0], [2, 3], [3, 1], [3, 2]]
    """
    n = check_int("nodes", n, min_value=1)
    if n & (n - 1):
        raise ValueError(f"nodes must be a power of two for a hypercube, got {n}")
    src = np.arange(n, dtype=np.int64)
    bits = n.bit_length() - 1
    if bits == 0:
        return PeriodicTopology(n, [EMPTY_EDGES], name=f"hypercube(n={n})")
    e = np.concatenate([np.stack([src, src ^ (1 << b)], 1) for b in range(bits)])
    return PeriodicTopology(n, [e], name=f"hypercube(n={n})")


def torus(rows: int, cols: int) -> PeriodicTopology:
    """Static 2-D torus: each node exchanges with its 4 grid neighbours.

    Node ``(r, c)`` is ``r * cols + c``.

    Examples
    --------
    >>> torus(3, 3).out_degree(0).tolist()
    [4, 4, 4, 4, 4, 4, 4, 4, 4]
    """
    rows = check_int("rows", rows, min_value=1)
    cols = check_int("cols", cols, min_value=1)
    r, c = np.divmod(np.arange(rows * cols, dtype=np.int64), cols)
    src, dst = [], []
    for dr, dc in ((1, 0), (-1, 0), (0, 1), (0, -1)):
        src.append(r * cols + c)
        dst.append(((r + dr) % rows) * cols + (c + dc) % cols)
    return PeriodicTopology(
        rows * cols,
        [np.stack([np.concatenate(src), np.concatenate(dst)], 1)],
        name=f"torus({rows}x{cols})",
    )


def star(n: int) -> PeriodicTopology:
    """Static star: node 0 exchanges with every other node.

    Examples
    --------
    >>> star(3).edges(0).tolist()
    [[0, 1], [0, 2], [1, 0], [2, 0]]
    """
    n = check_int("nodes", n, min_value=1)
    leaves = np.arange(1, n, dtype=np.int64)
    hub = np.zeros_like(leaves)
    e = np.stack([np.concatenate([hub, leaves]), np.concatenate([leaves, hub])], 1)
    return PeriodicTopology(n, [e], name=f"star(n={n})")


def from_networkx(graph: nx.Graph) -> PeriodicTopology:
    """A static topology from a networkx ``DiGraph`` or ``Graph``.

    Nodes are numbered in the order of ``graph.nodes``; an undirected edge
    becomes two directed ones; self-loops are dropped (the self share is
    always kept by the mixing weights).

    Examples
    --------
    >>> import networkx as nx
    >>> topo = from_networkx(nx.path_graph(3))
    >>> topo.edges(0).tolist()
    [[0, 1], [1, 0], [1, 2], [2, 1]]
    """
    if not isinstance(graph, nx.Graph):
        raise TypeError(f"graph must be a networkx Graph or DiGraph, got {type(graph).__name__}")
    nodes = list(graph.nodes)
    if not nodes:
        raise ValueError("graph must have at least 1 node, got 0")
    index = {v: i for i, v in enumerate(nodes)}
    pairs = [(index[u], index[v]) for u, v in graph.edges()]
    if not graph.is_directed():
        pairs += [(v, u) for u, v in pairs]
    e = np.array(pairs, dtype=np.int64).reshape(-1, 2)
    return PeriodicTopology(len(nodes), [e], name=f"networkx(n={len(nodes)})")
