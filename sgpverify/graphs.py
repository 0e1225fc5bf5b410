"""Time-varying directed communication topologies (peer schedules).

A :class:`Topology` answers, for iteration ``k``, who sends to whom: an edge
array of shape ``(m, 2)`` with rows ``(sender, receiver)``, sorted, without
self-loops or duplicates. It also has ``n`` (number of nodes) and ``period``
(an int, or None for random or aperiodic schedules). This module knows nothing
of weights: :mod:`sgpverify.mixing` turns edges into mixing matrices.

Random topologies are seeded and give random access by step: ``edges(k)`` is a
pure function of ``(seed, k)``, so the same object always answers the same.

Examples
--------
>>> import sgpverify as sv
>>> topo = sv.graphs.exponential(8)
>>> topo.period
3
>>> topo.edges(1)[:3].tolist()
[[0, 2], [1, 3], [2, 4]]
"""

from __future__ import annotations

import math
from functools import reduce

import networkx as nx
import numpy as np

from ._validate import check_float, check_int, resolve_seed, rng_for

__all__ = [
    "Topology",
    "PeriodicTopology",
    "exponential",
    "exponential_rounds",
    "exponential_two_sided",
    "bipartite_exponential",
    "ring",
    "complete",
    "hypercube",
    "torus",
    "star",
    "erdos_renyi",
    "random_peer",
    "from_networkx",
    "schedule",
    "with_link_failures",
    "with_stragglers",
    "with_message_loss",
    "exponential_base",
    "check_edges",
    "is_strongly_connected",
    "edges_from_offsets",
    "TOPOLOGY_NAMES",
    "by_name",
]

_EMPTY = np.zeros((0, 2), dtype=np.int64)
_EMPTY.setflags(write=False)


def normalize_edges(src, dst, n):
    """Sorted, de-duplicated ``(m, 2)`` int64 edges without self-loops (read-only)."""
    src = np.asarray(src, dtype=np.int64).ravel()
    dst = np.asarray(dst, dtype=np.int64).ravel()
    keep = src != dst
    codes = np.sort(src[keep] * n + dst[keep])
    if codes.size > 1:  # sort-based de-duplication (np.unique is slower on small arrays)
        first = np.empty(codes.size, dtype=bool)
        first[0] = True
        np.not_equal(codes[1:], codes[:-1], out=first[1:])
        codes = codes[first]
    out = np.empty((codes.size, 2), dtype=np.int64)
    out[:, 0] = codes // n
    out[:, 1] = codes % n
    out.setflags(write=False)
    return out


def edges_from_offsets(n, offsets):
    """Edges ``i -> (i + o) mod n`` for every node i and offset o (circulant step)."""
    if n == 1 or not offsets:
        return _EMPTY
    src = np.tile(np.arange(n, dtype=np.int64), len(offsets))
    dst = (src + np.repeat(np.asarray(offsets, dtype=np.int64), n)) % n
    return normalize_edges(src, dst, n)


def _check_k(k):
    return check_int("k", k, min_value=0)


def check_edges(edges, n, k=None):
    """Validate and normalise an edge array returned by a topology.

    Edges are sorted by ``(sender, receiver)``; an unsorted array is sorted
    (never misread), while self-loops, duplicates, endpoints outside
    ``[0, n - 1]`` and arrays not shaped ``(m, 2)`` are rejected.

    Parameters
    ----------
    edges : array_like of int, shape (m, 2)
        Rows ``(sender, receiver)``.
    n : int
        Number of nodes.
    k : int, optional
        Iteration, named in error messages.

    Returns
    -------
    numpy.ndarray
        Read-only int64 array ``(m, 2)``, sorted, without self-loops or duplicates.

    Raises
    ------
    ValueError
        Naming the iteration and the first offending edge.

    Examples
    --------
    >>> check_edges([[3, 0], [0, 1]], 4).tolist()
    [[0, 1], [3, 0]]
    >>> check_edges([[0, 1], [0, 1]], 4, k=7)
    Traceback (most recent call last):
    ...
    ValueError: edges of step 7 must not repeat an edge, got (0, 1) twice
    """
    at = "" if k is None else f" of step {k}"
    try:
        e = np.asarray(edges)
    except Exception as exc:  # pragma: no cover - exotic containers
        raise TypeError(f"edges{at} must be an integer array of shape (m, 2), got {type(edges).__name__}") from exc
    if e.size == 0:
        return _EMPTY
    if e.ndim != 2 or e.shape[1] != 2:
        raise ValueError(f"edges{at} must be an integer array of shape (m, 2), got shape {e.shape}")
    if e.dtype != np.int64:
        if not (
            np.issubdtype(e.dtype, np.integer) or (np.issubdtype(e.dtype, np.floating) and np.all(e == np.round(e)))
        ):
            raise TypeError(f"edges{at} must be an integer array of shape (m, 2), got dtype {e.dtype}")
        e = e.astype(np.int64)
    src, dst = e[:, 0], e[:, 1]
    bad = (src < 0) | (src >= n) | (dst < 0) | (dst >= n)
    if bad.any():
        i = int(np.flatnonzero(bad)[0])
        raise ValueError(f"edges{at} must have endpoints in [0, {n - 1}], got ({int(src[i])}, {int(dst[i])})")
    loop = src == dst
    if loop.any():
        i = int(np.flatnonzero(loop)[0])
        raise ValueError(
            f"edges{at} must not contain self-loops (the self share is implicit), got ({int(src[i])}, {int(dst[i])})"
        )
    codes = src * n + dst
    step = np.diff(codes)
    if step.size and not (step > 0).all():
        order = np.argsort(codes, kind="stable")
        codes = codes[order]
        dup = np.flatnonzero(np.diff(codes) == 0)
        if dup.size:
            c = int(codes[dup[0]])
            raise ValueError(f"edges{at} must not repeat an edge, got ({c // n}, {c % n}) twice")
        e = e[order]
    elif e.flags.writeable:
        e = e.copy()  # never freeze (or keep) the caller's own array
    e.setflags(write=False)
    return e


class Topology:
    """Base class: a time-varying directed graph on nodes ``0..n-1``.

    Subclasses implement ``_edges(k)``; users call :meth:`edges`.

    Attributes
    ----------
    n : int
        Number of nodes.
    period : int or None
        ``edges(k) == edges(k + period)`` for every k; None if random or aperiodic.
    name : str
        Short description, used in reports.
    """

    n: int
    period: int | None
    name: str

    def edges(self, k):
        """Directed edges ``(sender, receiver)`` used at iteration ``k``.

        Returns
        -------
        numpy.ndarray
            Read-only int64 array of shape ``(m, 2)``, sorted, without
            self-loops or duplicates.

        Raises
        ------
        ValueError
            If a subclass's ``_edges(k)`` holds a self-loop, a duplicate or an
            endpoint out of range (unsorted edges are sorted, never misread).
        """
        return self._valid_edges(_check_k(k))

    def _valid_edges(self, k):
        """``_edges(k)``, validated and sorted unless the class is built in."""
        if type(self)._edges in _CANONICAL:  # built-in: already canonical
            return self._edges(k)
        return check_edges(self._edges(k), self.n, k)

    def _edges(self, k):  # pragma: no cover - abstract
        raise NotImplementedError

    def _lost(self, k):
        """Boolean mask over ``edges(k)``: the messages lost in flight (None: none)."""
        return None

    def lost(self, k):
        """Which messages of ``edges(k)`` are lost in flight (bool array, shape ``(m,)``).

        All False except under :func:`with_message_loss`.
        """
        k = _check_k(k)
        mask = self._lost(k)
        return np.zeros(len(self._valid_edges(k)), dtype=bool) if mask is None else mask

    #: True if some message may be lost in flight (:func:`with_message_loss`).
    loses_messages = False

    def out_degree(self, k):
        """Number of out-neighbours of each node at step ``k`` (shape ``(n,)``)."""
        return np.bincount(self.edges(k)[:, 0], minlength=self.n)

    def in_degree(self, k):
        """Number of in-neighbours of each node at step ``k`` (shape ``(n,)``)."""
        return np.bincount(self.edges(k)[:, 1], minlength=self.n)

    def union(self, start, stop):
        """Edges of the union graph over steps ``start <= k < stop``."""
        start = _check_k(start)
        stop = check_int("stop", stop, min_value=start)
        ks = range(start, stop)
        if self.period is not None and stop - start > self.period:
            ks = range(start, start + self.period)
        parts = [self._valid_edges(k) for k in ks]
        if not parts:
            return _EMPTY
        e = np.concatenate(parts)
        return normalize_edges(e[:, 0], e[:, 1], self.n)

    def to_networkx(self, k=0):
        """The graph of step ``k`` as a :class:`networkx.DiGraph` on ``range(n)``."""
        g = nx.DiGraph()
        g.add_nodes_from(range(self.n))
        g.add_edges_from(map(tuple, self.edges(k).tolist()))
        return g

    def relabel(self, perm):
        """The same schedule with node ``i`` renamed ``perm[i]``."""
        return _Relabeled(self, perm)

    def __repr__(self):
        return f"<Topology {self.name}: n={self.n}, period={self.period}>"


class PeriodicTopology(Topology):
    """A deterministic schedule cycling through a fixed list of edge sets.

    Parameters
    ----------
    n : int
        Number of nodes.
    steps : sequence of array_like
        One ``(m, 2)`` edge array per step of the period (self-loops and
        duplicates are removed).
    name : str
        Description for reports.
    offsets : tuple of tuple of int, optional
        Only for circulant schedules (every node i sends to ``i + o mod n``):
        the offsets of each step. Checks use it to exploit the symmetry.
    """

    def __init__(self, n, steps, name="periodic", offsets=None):
        self.n = check_int("n", n, min_value=1)
        if len(steps) == 0:
            raise ValueError("steps must hold at least one edge set, got 0")
        clean = []
        for s in steps:
            e = np.asarray(s, dtype=np.int64).reshape(-1, 2)
            if e.size and (e.min() < 0 or e.max() >= self.n):
                raise ValueError(f"edge endpoints must be in [0, {self.n - 1}], got {int(e.min())}..{int(e.max())}")
            clean.append(normalize_edges(e[:, 0], e[:, 1], self.n))
        self._steps = tuple(clean)
        self.period = len(clean)
        self.name = name
        self.offsets = offsets

    def _edges(self, k):
        return self._steps[k % self.period]


def exponential_rounds(n, peers=1, bidirectional=False):
    """Peer offsets of each round of the exponential schedule.

    Round ``i`` holds the offsets ``j * (peers + 1)**i mod n`` for
    ``j = 1..peers``, for every i with ``(peers + 1)**i <= n - 1`` (exact
    integer arithmetic, no float logarithms), without zero offsets (self-peers)
    or duplicates. With ``bidirectional=True`` each round is followed by its
    negated offsets unless they are the same set (the authors' +2^i, -2^i cycle).

    Examples
    --------
    >>> exponential_rounds(8)
    ((1,), (2,), (4,))
    >>> exponential_rounds(8, bidirectional=True)
    ((1,), (7,), (2,), (6,), (4,))
    >>> len(exponential_rounds(244, peers=2))  # 3**5 = 243 <= 243
    6
    """
    n = check_int("nodes", n, min_value=1)
    peers = check_int("peers", peers)
    if not 1 <= peers <= max(1, n - 1):
        raise ValueError(
            f"peers must be an integer in [1, nodes - 1] = [1, {max(1, n - 1)}] for nodes = {n}, got {peers}"
        )
    rounds = []
    power = 1
    while power <= n - 1:
        offs = []
        for j in range(1, peers + 1):
            o = (j * power) % n
            if o != 0 and o not in offs:
                offs.append(o)
        rounds.append(tuple(offs))
        if bidirectional:
            neg = []
            for o in offs:
                m = (-o) % n
                if m not in neg:
                    neg.append(m)
            if set(neg) != set(offs):
                rounds.append(tuple(neg))
        power *= peers + 1
    return tuple(rounds)


def exponential(n, peers=1, bidirectional=False):
    """The paper's time-varying directed exponential graph.

    At step ``k`` node ``i`` sends to ``i + o (mod n)`` for each offset ``o``
    of round ``k mod m`` of :func:`exponential_rounds`: with ``peers=1`` the
    single peer ``i + 2**(k mod m)``, ``m = floor(log2(n - 1)) + 1``.

    Parameters
    ----------
    n : int
        Number of nodes, >= 1.
    peers : int
        Peers per step, in ``[1, n - 1]``; offsets ``j * (peers+1)**i``.
    bidirectional : bool
        Alternate positive and negative offsets (+2^i, -2^i), as in the
        authors' job scripts.

    Notes
    -----
    THEORY.md section 4. Every node sends to and receives from the same number
    of peers, so the uniform push matrices are doubly stochastic; the product
    over one period is exactly ``(1/n) 1 1^T`` iff n is a power of ``peers+1``.

    Examples
    --------
    >>> topo = exponential(6)
    >>> topo.offsets
    ((1,), (2,), (4,))
    >>> topo.edges(2)[:2].tolist()
    [[0, 4], [1, 5]]
    """
    rounds = exponential_rounds(n, peers, bidirectional)
    n = int(n)
    steps = [edges_from_offsets(n, r) for r in rounds] or [_EMPTY]
    kind = "exponential-bidir" if bidirectional else "exponential"
    name = f"{kind}(n={n}, peers={int(peers)})"
    return PeriodicTopology(n, steps, name=name, offsets=rounds or ((),))


def _bipartite_offsets(n):
    """``+1, -1, +(1+2), -(1+2), +(1+4), -(1+4), ...`` below n (mod n), no repeats."""
    seq = []
    i = 0
    while 2**i <= n - 1:
        o = 1 if i == 0 else 1 + 2**i
        if o < n:
            for s in (o % n, (-o) % n):
                if s not in seq:
                    seq.append(s)
        i += 1
    return tuple(seq)


def bipartite_exponential(n, matching=False):
    """Bipartite exponential graph (the authors' D-PSGD / AD-PSGD baseline).

    The peer offsets are ``+1, -1, +(1+2), -(1+2), +(1+4), -(1+4), ...``
    (below n, repeats dropped), one per step, cycling. All offsets are odd, so
    every message goes between an odd and an even rank.

    - Default (``matching=False``), the authors' ``DynamicBipartiteExponentialGraph``
      with one peer per step: at step k **every** node i sends to ``i + o_k``
      (mod n), a directed cycle through odd and even ranks. This is the
      schedule the authors' code runs.
    - ``matching=True``: every odd (active) node i exchanges with the even
      (passive) node ``i + o_k`` in both directions, a perfect matching each
      step (the bilateral exchange of AD-PSGD's description). Both are doubly
      stochastic with uniform weights.

    Parameters
    ----------
    n : int
        Number of nodes, an even integer >= 2.
    matching : bool
        Build the perfect-matching variant instead of the authors' cycle.

    Notes
    -----
    THEORY.md section 4. Unlike the authors' code, duplicate peers (``n = 4``:
    ``+3 = -1``) are dropped.

    Examples
    --------
    >>> bipartite_exponential(8).partner_offsets
    (1, 7, 3, 5)
    >>> bipartite_exponential(8).edges(2)[:2].tolist()   # every node: i -> i + 3
    [[0, 3], [1, 4]]
    >>> bipartite_exponential(8, matching=True).edges(2)[:2].tolist()
    [[0, 5], [1, 4]]
    """
    n = check_int("nodes", n, min_value=2)
    if n % 2:
        raise ValueError(f"nodes must be an even integer >= 2, got {n}")
    seq = _bipartite_offsets(n)
    if not matching:
        topo = PeriodicTopology(
            n,
            [edges_from_offsets(n, (o,)) for o in seq],
            name=f"bipartite-exponential(n={n})",
            offsets=tuple((o,) for o in seq),
        )
        topo.partner_offsets = seq
        return topo
    active = np.arange(1, n, 2, dtype=np.int64)
    steps = []
    for o in seq:
        partner = (active + o) % n
        steps.append(np.stack([np.concatenate([active, partner]), np.concatenate([partner, active])], 1))
    topo = PeriodicTopology(n, steps, name=f"bipartite-matching(n={n})")
    topo.partner_offsets = seq  # not circulant: only odd nodes use +o
    return topo


def exponential_two_sided(n):
    """One round per power of two, sending to ``i + 2**i`` and ``i - 2**i`` in the same step.

    The authors' ``DynamicDirectedExponentialGraph`` with two peers per step:
    its phone book ``+1, -1, +2, -2, +4, -4, ...`` is read two entries at a
    time. Offsets equal mod n (``+n/2 = -n/2``) are sent once.

    Examples
    --------
    >>> exponential_two_sided(8).offsets
    ((1, 7), (2, 6), (4,))
    """
    n = check_int("nodes", n, min_value=1)
    rounds = []
    power = 1
    while power <= n - 1:
        offs = []
        for o in (power % n, (-power) % n):
            if o != 0 and o not in offs:
                offs.append(o)
        rounds.append(tuple(offs))
        power *= 2
    steps = [edges_from_offsets(n, r) for r in rounds] or [_EMPTY]
    return PeriodicTopology(n, steps, name=f"exponential-two-sided(n={n})", offsets=tuple(rounds) or ((),))


def exponential_base(n, base=2):
    """Time-varying exponential graph in base b: node i sends to ``i + b**(k mod m)``.

    One peer per step; the offsets are ``b**i`` for every i with
    ``b**i <= n - 1`` (exact integer arithmetic, no float logarithm).
    ``base=2`` is :func:`exponential` with one peer.

    Examples
    --------
    >>> exponential_base(10, 3).offsets
    ((1,), (3,), (9,))
    >>> exponential_base(244, 3).period   # 3**5 = 243 <= 243
    6
    """
    n = check_int("nodes", n, min_value=1)
    base = check_int("base", base, min_value=2)
    rounds = []
    power = 1
    while power <= n - 1:
        rounds.append((power,))
        power *= base
    steps = [edges_from_offsets(n, r) for r in rounds] or [_EMPTY]
    return PeriodicTopology(n, steps, name=f"exponential-base(n={n}, base={base})", offsets=tuple(rounds) or ((),))


def ring(n, bidirectional=False, alternating=False):
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


def complete(n):
    """Static complete digraph: every node sends to every other node.

    Examples
    --------
    >>> len(complete(5).edges(0))
    20
    """
    n = check_int("nodes", n, min_value=1)
    offs = tuple(range(1, n))
    return PeriodicTopology(n, [edges_from_offsets(n, offs)], name=f"complete(n={n})")


def hypercube(n):
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
        return PeriodicTopology(n, [_EMPTY], name=f"hypercube(n={n})")
    e = np.concatenate([np.stack([src, src ^ (1 << b)], 1) for b in range(bits)])
    return PeriodicTopology(n, [e], name=f"hypercube(n={n})")


def torus(rows, cols):
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


def star(n):
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


def from_networkx(graph):
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


class _RandomTopology(Topology):
    period = None

    def __init__(self, n, seed):
        self.n = n
        self.seed = resolve_seed("seed", seed)

    def _edges(self, k):
        return self._draw(rng_for(self.seed, self.domain, k))


class _ErdosRenyi(_RandomTopology):
    domain = "erdos-renyi"

    def __init__(self, n, p, seed):
        super().__init__(n, seed)
        self.p = p
        self.name = f"erdos-renyi(n={n}, p={p:g})"

    def _draw(self, rng):
        n = self.n
        total = n * (n - 1)
        if total == 0:
            return _EMPTY
        m = int(rng.binomial(total, self.p))
        codes = np.sort(rng.choice(total, size=m, replace=False)).astype(np.int64)
        src, r = np.divmod(codes, n - 1)
        dst = r + (r >= src)
        return normalize_edges(src, dst, n)


def erdos_renyi(n, p, seed=None):
    """A fresh random digraph each step: each ordered pair is an edge with probability p.

    Examples
    --------
    >>> topo = erdos_renyi(10, 0.3, seed=1)
    >>> bool((topo.edges(5) == topo.edges(5)).all()), topo.period
    (True, None)
    """
    n = check_int("nodes", n, min_value=1)
    p = check_float("p", p, low=0.0, high=1.0)
    return _ErdosRenyi(n, p, seed)


class _RandomPeer(_RandomTopology):
    domain = "random-peer"
    #: steps drawn together from one stream (random access by block, cached)
    BLOCK = 64

    def __init__(self, n, seed):
        super().__init__(n, seed)
        self.name = f"random-peer(n={n})"
        self._block = (None, None)

    def _edges(self, k):
        n = self.n
        if n == 1:
            return _EMPTY
        b, r = divmod(k, self.BLOCK)
        if self._block[0] != b:
            # int32 when it holds n (half the memory: 256 MB a block at n = 10^6); numpy
            # draws the same values for either dtype below 2^32 (tested)
            dt = np.int32 if n < 2**31 else np.int64
            offs = rng_for(self.seed, self.domain, b).integers(1, n, size=(self.BLOCK, n), dtype=dt)
            self._block = (b, offs)
        # src = 0..n-1, one distinct non-self peer each: already sorted and unique
        out = np.empty((n, 2), dtype=np.int64)
        out[:, 0] = np.arange(n)
        out[:, 1] = (out[:, 0] + self._block[1][r]) % n
        out.setflags(write=False)
        return out


def random_peer(n, seed=None):
    """Each node sends to one uniformly random other node each step.

    In-degrees are unequal, so the uniform push matrices are column- but not
    row-stochastic: this schedule exercises push-sum de-biasing.

    Examples
    --------
    >>> topo = random_peer(6, seed=0)
    >>> topo.out_degree(3).tolist()
    [1, 1, 1, 1, 1, 1]
    """
    n = check_int("nodes", n, min_value=1)
    return _RandomPeer(n, seed)


class _Schedule(Topology):
    def __init__(self, parts, lengths, repeat):
        self.n = parts[0].n
        self._parts = tuple(parts)
        self._lengths = tuple(lengths)
        self._bounds = np.cumsum(lengths)
        self.repeat = repeat
        total = int(self._bounds[-1])
        if repeat and all(p.period is not None for p in parts):
            self.period = reduce(math.lcm, [total] + [p.period for p in parts])
        elif len(parts) == 1:
            self.period = parts[0].period
        else:
            self.period = None
        self.loses_messages = any(p.loses_messages for p in parts)
        inner = ", ".join(f"{p.name} x{m}" for p, m in zip(parts, lengths))
        self.name = f"schedule([{inner}]{'' if repeat else ', then last'})"

    def _part(self, k):
        total = int(self._bounds[-1])
        if self.repeat:
            pos = k % total
            idx = int(np.searchsorted(self._bounds, pos, side="right"))
        else:
            idx = min(int(np.searchsorted(self._bounds, k, side="right")), len(self._parts) - 1)
        return self._parts[idx]

    def _edges(self, k):
        return self._part(k)._valid_edges(k)

    def _lost(self, k):
        return self._part(k)._lost(k)


def schedule(parts, repeat=True):
    """Switch between topologies over time.

    Parameters
    ----------
    parts : sequence
        Topologies, each used for one step, or ``(topology, steps)`` pairs.
        Each topology is asked for its edges at the global step k.
    repeat : bool
        Cycle through ``parts`` forever (default). With False the last part
        is used for every step after the others, e.g. 2 peers early then 1:
        ``schedule([(exponential(n, 2), 1000), exponential(n, 1)], repeat=False)``.

    Examples
    --------
    >>> s = schedule([ring(4), complete(4)])
    >>> [len(s.edges(k)) for k in range(4)], s.period
    ([4, 12, 4, 12], 2)
    """
    parts = list(parts)
    if not parts:
        raise ValueError("parts must hold at least one topology, got 0")
    topos, lengths = [], []
    for i, p in enumerate(parts):
        if isinstance(p, tuple):
            if len(p) != 2:
                raise ValueError(f"parts[{i}] must be a topology or a (topology, steps) pair, got {p!r}")
            t, m = p
            m = check_int(f"parts[{i}] steps", m, min_value=1)
        else:
            t, m = p, 1
        if not isinstance(t, Topology):
            raise TypeError(f"parts[{i}] must be a Topology, got {type(t).__name__}")
        topos.append(t)
        lengths.append(m)
    ns = {t.n for t in topos}
    if len(ns) != 1:
        raise ValueError(f"parts must all have the same n, got {sorted(ns)}")
    return _Schedule(topos, lengths, bool(repeat))


class _LinkFailures(Topology):
    period = None

    def __init__(self, base, p, seed):
        self.base = base
        self.n = base.n
        self.p = p
        self.seed = resolve_seed("seed", seed)
        self.loses_messages = base.loses_messages
        self.name = f"{base.name} with link failures p={p:g}"

    def _keep(self, k, m):
        return rng_for(self.seed, "link-failures", k).random(m) >= self.p

    def _edges(self, k):
        e = self.base._valid_edges(k)
        out = e[self._keep(k, len(e))]
        out.setflags(write=False)
        return out

    def _lost(self, k):
        lost = self.base._lost(k)
        if lost is None:
            return None
        return lost[self._keep(k, len(lost))]


def with_link_failures(topo, p, seed=None):
    """Drop each message independently with probability ``p``.

    A dropped message is never sent: the push weights are computed on the
    surviving edges, so the sender keeps that share and mass is conserved.

    Examples
    --------
    >>> t = with_link_failures(complete(6), 0.5, seed=0)
    >>> 0 < len(t.edges(0)) < 30
    True
    """
    if not isinstance(topo, Topology):
        raise TypeError(f"topo must be a Topology, got {type(topo).__name__}")
    p = check_float("p", p, low=0.0, high=1.0)
    return _LinkFailures(topo, p, seed)


class _Stragglers(Topology):
    def __init__(self, base, nodes, every):
        self.base = base
        self.n = base.n
        self.nodes = nodes
        self.every = every
        self.period = None if base.period is None else math.lcm(base.period, every)
        self.name = f"{base.name} with stragglers {list(nodes)} every {every}"
        self._mask = np.zeros(self.n, dtype=bool)
        self._mask[list(nodes)] = True
        self.loses_messages = base.loses_messages

    def _edges(self, k):
        e = self.base._valid_edges(k)
        if k % self.every == 0:
            return e
        out = e[~self._mask[e[:, 0]]]
        out.setflags(write=False)
        return out

    def _lost(self, k):
        lost = self.base._lost(k)
        if lost is None or k % self.every == 0:
            return lost
        return lost[~self._mask[self.base._valid_edges(k)[:, 0]]]


def with_stragglers(topo, nodes, every):
    """Straggler nodes send only on steps ``k`` with ``k % every == 0``.

    On the other steps a straggler's outgoing messages are not sent (it keeps
    its whole mass); it still receives.

    Examples
    --------
    >>> t = with_stragglers(ring(4), [0], every=3)
    >>> [len(t.edges(k)) for k in range(4)]
    [4, 3, 3, 4]
    """
    if not isinstance(topo, Topology):
        raise TypeError(f"topo must be a Topology, got {type(topo).__name__}")
    nodes = tuple(sorted({check_int("nodes[i]", v, min_value=0, max_value=topo.n - 1) for v in nodes}))
    every = check_int("every", every, min_value=1)
    return _Stragglers(topo, nodes, every)


class _MessageLoss(Topology):
    loses_messages = True

    def __init__(self, base, p, seed):
        self.base = base
        self.n = base.n
        self.p = p
        self.seed = resolve_seed("seed", seed)
        self.period = None if p > 0 else base.period
        self.name = f"{base.name} with message loss p={p:g}"

    def _edges(self, k):
        return self.base._valid_edges(k)

    def _lost(self, k):
        m = len(self.base._valid_edges(k))
        lost = rng_for(self.seed, "message-loss", k).random(m) < self.p
        inner = self.base._lost(k)
        return lost if inner is None else lost | inner


def with_message_loss(topo, p, seed=None):
    """Lose each message in flight independently with probability ``p``.

    Unlike :func:`with_link_failures` (a dropped link is never used, so the
    sender keeps that share), here the sender splits its mass over all its
    out-neighbours as usual and a lost share simply vanishes: the mixing
    matrix of the step is column-substochastic and mass is **not** conserved.
    :func:`sgpverify.simulate` reports the mass lost (``Trace.mass_lost``,
    ``Trace.weight_lost``), so that ``mass_error - mass_lost`` is round-off;
    a mass-conservation check must detect this fault (a negative control).

    Parameters
    ----------
    topo : Topology
        The schedule whose messages may be lost; ``edges(k)`` is unchanged
        (the messages are still sent).
    p : float
        Probability in [0, 1] that a message is lost.
    seed : int, optional
        Seed of the losses (random access by step); None draws fresh entropy.

    Examples
    --------
    >>> t = with_message_loss(complete(6), 0.5, seed=0)
    >>> len(t.edges(0)), 0 < int(t.lost(0).sum()) < 30
    (30, True)
    """
    if not isinstance(topo, Topology):
        raise TypeError(f"topo must be a Topology, got {type(topo).__name__}")
    p = check_float("p", p, low=0.0, high=1.0)
    return _MessageLoss(topo, p, seed)


class _Relabeled(Topology):
    def __init__(self, base, perm):
        perm = np.asarray(perm)
        if perm.shape != (base.n,) or not np.array_equal(np.sort(perm), np.arange(base.n)):
            raise ValueError(f"perm must be a permutation of range({base.n}), got {perm.tolist()}")
        if base.loses_messages:
            raise ValueError("relabel the topology before adding message loss, got a topology with message loss")
        self.base = base
        self.perm = perm.astype(np.int64)
        self.perm.setflags(write=False)
        self.n = base.n
        self.period = base.period
        self.name = f"{base.name} relabelled"

    def _edges(self, k):
        e = self.base._valid_edges(k)
        return normalize_edges(self.perm[e[:, 0]], self.perm[e[:, 1]], self.n)


def is_strongly_connected(n, edges):
    """Whether the digraph on ``range(n)`` with these edges is strongly connected."""
    from scipy.sparse import csr_matrix
    from scipy.sparse.csgraph import connected_components

    if n == 1:
        return True
    e = np.asarray(edges).reshape(-1, 2)
    if len(e) < n:
        return False
    g = csr_matrix((np.ones(len(e), dtype=bool), (e[:, 0], e[:, 1])), shape=(n, n))
    ncomp, _ = connected_components(g, directed=True, connection="strong")
    return ncomp == 1


#: Generator names accepted by :func:`by_name` and the command line (kebab case).
TOPOLOGY_NAMES = (
    "exponential",
    "exponential-bidir",
    "exponential-two-sided",
    "exponential-base",
    "bipartite-exponential",
    "bipartite-matching",
    "ring",
    "ring-bidir",
    "ring-alternating",
    "complete",
    "hypercube",
    "torus",
    "star",
    "erdos-renyi",
    "random-peer",
)


def by_name(name, n, *, peers=1, seed=None, p=None, rows=None, base=3):
    """Build a topology from its kebab-case name (as on the command line).

    Parameters
    ----------
    name : str
        One of :data:`TOPOLOGY_NAMES`.
    n : int
        Number of nodes.
    peers : int
        Peers per step (exponential schedules only).
    seed : int, optional
        Seed of random topologies.
    p : float, optional
        Edge probability of ``erdos-renyi`` (default ``min(1, 2 ln(n) / n)``).
    rows : int, optional
        Rows of the torus (default: the largest divisor of n not above sqrt(n)).
    base : int
        Base of ``exponential-base`` (default 3).

    Examples
    --------
    >>> by_name("exponential-bidir", 8).offsets
    ((1,), (7,), (2,), (6,), (4,))
    """
    if name not in TOPOLOGY_NAMES:
        raise ValueError(f"topology must be one of {', '.join(TOPOLOGY_NAMES)}, got {name!r}")
    n = check_int("nodes", n, min_value=1)
    if peers != 1 and name not in ("exponential", "exponential-bidir"):
        raise ValueError(f"peers applies only to exponential topologies, got peers = {peers} for {name}")
    if name == "exponential":
        return exponential(n, peers=peers)
    if name == "exponential-bidir":
        return exponential(n, peers=peers, bidirectional=True)
    if name == "exponential-two-sided":
        return exponential_two_sided(n)
    if name == "exponential-base":
        return exponential_base(n, base)
    if name == "bipartite-exponential":
        return bipartite_exponential(n)
    if name == "bipartite-matching":
        return bipartite_exponential(n, matching=True)
    if name == "ring-alternating":
        return ring(n, alternating=True)
    if name == "ring":
        return ring(n)
    if name == "ring-bidir":
        return ring(n, bidirectional=True)
    if name == "complete":
        return complete(n)
    if name == "hypercube":
        return hypercube(n)
    if name == "torus":
        if rows is None:
            rows = max(d for d in range(1, math.isqrt(n) + 1) if n % d == 0)
        rows = check_int("rows", rows, min_value=1)
        if n % rows:
            raise ValueError(f"rows must divide nodes = {n}, got {rows}")
        return torus(rows, n // rows)
    if name == "star":
        return star(n)
    if name == "erdos-renyi":
        if p is None:
            p = 1.0 if n < 3 else min(1.0, 2 * math.log(n) / n)
        return erdos_renyi(n, p, seed=seed)
    return random_peer(n, seed=seed)


#: ``_edges`` of the built-in classes: their answers are canonical already
#: (sorted, no self-loops or duplicates), so :meth:`Topology.edges` skips the check.
_CANONICAL = frozenset(
    {
        PeriodicTopology._edges,
        _RandomTopology._edges,
        _RandomPeer._edges,
        _Schedule._edges,
        _LinkFailures._edges,
        _Stragglers._edges,
        _MessageLoss._edges,
        _Relabeled._edges,
    }
)
