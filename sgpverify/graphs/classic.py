"""Classic static (and two-step) topologies: rings, complete, hypercube, torus, star, networkx graphs.

Examples
--------
>>> ring(5, bidirectional=True).out_degree(0).tolist()
[2, 2, 2, 2, 2]
"""

from __future__ import annotations

from collections.abc import Sequence

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


def from_networkx(graph: nx.Graph | Sequence[nx.Graph]) -> PeriodicTopology:
    """A topology from a networkx ``DiGraph`` or ``Graph``, or a periodic schedule from a list of them.

    Nodes are numbered in the order of ``graph.nodes`` (of the first graph of
    a list: every graph of a list must have the same nodes); an undirected edge
    becomes two directed ones; self-loops are dropped (the self share is
    always kept by the mixing weights). A list ``[g0, g1, ...]`` is the
    schedule using ``g_(k mod len)`` at step k (period ``len``).

    Raises
    ------
    TypeError
        If ``graph`` is not a networkx graph nor a non-empty list of them.
    ValueError
        If a graph has no node, or the graphs of a list have different nodes.

    Examples
    --------
    >>> import networkx as nx
    >>> topo = from_networkx(nx.path_graph(3))
    >>> topo.edges(0).tolist()
    [[0, 1], [1, 0], [1, 2], [2, 1]]
    >>> s = from_networkx([nx.DiGraph([(0, 1), (1, 2)]), nx.DiGraph([(2, 0), (1, 0)])])
    >>> s.period, s.edges(3).tolist()
    (2, [[1, 0], [2, 0]])
    """
    if isinstance(graph, nx.Graph):
        graphs, name = [graph], "networkx"
    elif isinstance(graph, (list, tuple)) and graph and all(isinstance(g, nx.Graph) for g in graph):
        graphs, name = list(graph), "networkx schedule"
    else:
        got = type(graph).__name__
        if isinstance(graph, (list, tuple)):
            bad = next((g for g in graph if not isinstance(g, nx.Graph)), None)
            got = "an empty list" if not graph else f"a list holding a {type(bad).__name__}"
        raise TypeError(f"graph must be a networkx Graph or DiGraph, or a non-empty list of them, got {got}")
    nodes = list(graphs[0].nodes)
    if not nodes:
        raise ValueError("graph must have at least 1 node, got 0")
    index = {v: i for i, v in enumerate(nodes)}
    steps = []
    for j, g in enumerate(graphs):
        if set(g.nodes) != set(nodes):
            raise ValueError(
                f"graph[{j}] must have the nodes of graph[0] ({len(nodes)} nodes), got {g.number_of_nodes()} "
                f"nodes, {len(set(g.nodes) ^ set(nodes))} of them not shared"
            )
        pairs = [(index[u], index[v]) for u, v in g.edges()]
        if not g.is_directed():
            pairs += [(v, u) for u, v in pairs]
        steps.append(np.array(pairs, dtype=np.int64).reshape(-1, 2))
    n = len(nodes)
    label = f"{name}(n={n})" if len(steps) == 1 else f"{name}(n={n}, period={len(steps)})"
    return PeriodicTopology(n, steps, name=label)
