"""The topology contract: :class:`Topology`, periodic schedules, edge arrays.

A :class:`Topology` answers, for iteration ``k``, who sends to whom: an edge
array of shape ``(m, 2)`` with rows ``(sender, receiver)``, sorted, without
self-loops or duplicates. It also has ``n`` (number of nodes) and ``period``
(an int, or None for random or aperiodic schedules). The generator families
build on this module (:mod:`.exponential_graphs`, :mod:`.classic`,
:mod:`.random_graphs`, :mod:`.schedules`, :mod:`.faults`); it imports none of them.

Examples
--------
>>> topo = PeriodicTopology(3, [[[0, 1], [1, 2]], [[2, 0]]], name="two-step")
>>> topo.period, topo.edges(1).tolist(), topo.edges(2).tolist()
(2, [[2, 0]], [[0, 1], [1, 2]])
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from typing import Any, TypeVar

import networkx as nx
import numpy as np
from numpy.typing import ArrayLike, NDArray

from ..validation import check_int

__all__ = [
    "EMPTY_EDGES",
    "Edges",
    "Topology",
    "PeriodicTopology",
    "normalize_edges",
    "edges_from_offsets",
    "check_edges",
    "is_strongly_connected",
    "canonical",
    "is_canonical",
]

#: An edge array: int64, shape ``(m, 2)``, rows ``(sender, receiver)``.
Edges = NDArray[np.int64]

#: The read-only ``(0, 2)`` edge array (a step without messages).
EMPTY_EDGES = np.zeros((0, 2), dtype=np.int64)
EMPTY_EDGES.setflags(write=False)


def normalize_edges(src: ArrayLike, dst: ArrayLike, n: int) -> Edges:
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


def edges_from_offsets(n: int, offsets: tuple[int, ...]) -> Edges:
    """Edges ``i -> (i + o) mod n`` for every node i and offset o (circulant step)."""
    if n == 1 or not offsets:
        return EMPTY_EDGES
    src = np.tile(np.arange(n, dtype=np.int64), len(offsets))
    dst = (src + np.repeat(np.asarray(offsets, dtype=np.int64), n)) % n
    return normalize_edges(src, dst, n)


def _check_k(k: int) -> int:
    return check_int("k", k, min_value=0)


def check_edges(edges: ArrayLike, n: int, k: int | None = None) -> Edges:
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
        return EMPTY_EDGES
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


#: ``_edges`` of the built-in classes (marked by :func:`canonical`): their answers
#: are canonical already (sorted, no self-loops or duplicates), so
#: :meth:`Topology.edges` skips the check.
_CANONICAL: set[Callable] = set()

_TopologyClass = TypeVar("_TopologyClass", bound="type[Topology]")


def canonical(cls: _TopologyClass) -> _TopologyClass:
    """Class decorator of the built-in topologies: trust ``cls._edges`` as canonical.

    :meth:`Topology.edges` then returns ``cls._edges(k)`` without
    :func:`check_edges` (sorted, no self-loops or duplicates, read-only int64
    are the class's own guarantee). The mark belongs to the function
    ``cls._edges``: a subclass that overrides ``_edges`` is validated again
    unless it is marked too. For classes of this package only; a user's
    topology should leave the check on.

    Returns
    -------
    type
        ``cls``, unchanged.
    """
    _CANONICAL.add(cls._edges)
    return cls


def is_canonical(cls: type[Topology]) -> bool:
    """Whether :meth:`Topology.edges` trusts ``cls._edges`` (see :func:`canonical`).

    Examples
    --------
    >>> is_canonical(PeriodicTopology), is_canonical(Topology)
    (True, False)
    """
    return cls._edges in _CANONICAL


class Topology:
    """Base class: a time-varying directed graph on nodes ``0..n-1``.

    Subclasses set ``n`` and implement ``_edges(k)``; users call :meth:`edges`.
    ``period`` and ``name`` have defaults: a subclass that sets neither is an
    aperiodic (or not known to be periodic) schedule named after its class.

    Attributes
    ----------
    n : int
        Number of nodes (a subclass must set it: reading it otherwise raises an
        AttributeError saying so).
    period : int or None
        ``edges(k) == edges(k + period)`` for every k; None (the default) if
        random, aperiodic or not known: every step is then examined.
    name : str
        Short description, used in reports (default: the class name and n).

    Examples
    --------
    >>> class Ring3(Topology):
    ...     n = 3
    ...     def _edges(self, k):
    ...         return [[0, 1], [1, 2], [2, 0]]
    >>> t = Ring3()
    >>> t.period, t.name, t.edges(5).tolist()
    (None, 'Ring3(n=3)', [[0, 1], [1, 2], [2, 0]])
    """

    n: int
    period: int | None = None
    name: str

    def __getattr__(self, attr: str) -> Any:
        # only called for attributes not set: ``name`` has a default, ``n`` is the subclass's to set
        if attr == "name":
            return f"{type(self).__name__}(n={self.n})"
        if attr == "n":
            raise AttributeError(
                f"{type(self).__name__} must set n, the number of nodes, before it is used: a Topology "
                "subclass sets n (and implements _edges(k)); period and name have defaults"
            )
        raise AttributeError(f"{type(self).__name__!r} object has no attribute {attr!r}")

    def edges(self, k: int) -> Edges:
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

    def _valid_edges(self, k: int) -> Edges:
        """``_edges(k)``, validated and sorted unless the class is built in."""
        if type(self)._edges in _CANONICAL:  # built-in: already canonical
            return self._edges(k)
        return check_edges(self._edges(k), self.n, k)

    def _edges(self, k: int) -> ArrayLike:  # pragma: no cover - abstract
        raise NotImplementedError

    def _lost(self, k: int) -> NDArray[np.bool_] | None:
        """Boolean mask over ``edges(k)``: the messages lost in flight (None: none)."""
        return None

    def lost(self, k: int) -> NDArray[np.bool_]:
        """Which messages of ``edges(k)`` are lost in flight (bool array, shape ``(m,)``).

        All False except under :func:`with_message_loss`.
        """
        k = _check_k(k)
        mask = self._lost(k)
        return np.zeros(len(self._valid_edges(k)), dtype=bool) if mask is None else mask

    #: True if some message may be lost in flight (:func:`with_message_loss`).
    loses_messages = False
    #: True if every node sends exactly one message each step, the receivers given by
    #: ``peers(k)`` (:func:`random_peer`): the engine builds such a step without the edge array.
    one_peer = False

    def out_degree(self, k: int) -> NDArray[np.intp]:
        """Number of out-neighbours of each node at step ``k`` (shape ``(n,)``)."""
        return np.bincount(self.edges(k)[:, 0], minlength=self.n)

    def in_degree(self, k: int) -> NDArray[np.intp]:
        """Number of in-neighbours of each node at step ``k`` (shape ``(n,)``)."""
        return np.bincount(self.edges(k)[:, 1], minlength=self.n)

    def union(self, start: int, stop: int) -> Edges:
        """Edges of the union graph over steps ``start <= k < stop``."""
        start = _check_k(start)
        stop = check_int("stop", stop, min_value=start)
        ks = range(start, stop)
        if self.period is not None and stop - start > self.period:
            ks = range(start, start + self.period)
        parts = [self._valid_edges(k) for k in ks]
        if not parts:
            return EMPTY_EDGES
        e = np.concatenate(parts)
        return normalize_edges(e[:, 0], e[:, 1], self.n)

    def to_networkx(self, k: int = 0) -> nx.DiGraph:
        """The graph of step ``k`` as a :class:`networkx.DiGraph` on ``range(n)``."""
        g = nx.DiGraph()
        g.add_nodes_from(range(self.n))
        g.add_edges_from(map(tuple, self.edges(k).tolist()))
        return g

    def relabel(self, perm: ArrayLike) -> Topology:
        """The same schedule with node ``i`` renamed ``perm[i]``."""
        return _Relabeled(self, perm)

    def __repr__(self) -> str:
        return f"<Topology {self.name}: n={self.n}, period={self.period}>"


@canonical
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

    def __init__(
        self,
        n: int,
        steps: Sequence[ArrayLike],
        name: str = "periodic",
        offsets: tuple[tuple[int, ...], ...] | None = None,
    ) -> None:
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


@canonical
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


def is_strongly_connected(n: int, edges: ArrayLike) -> bool:
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
