"""The exponential family: the paper's schedule and its variants.

:func:`exponential` (one or more peers per step, optionally alternating signs),
:func:`exponential_two_sided`, :func:`exponential_base`, the authors'
:func:`bipartite_exponential` and :func:`irregular_exponential` (unequal
in-degrees). All are :class:`~.base.PeriodicTopology` objects; the circulant
ones carry their ``offsets``.

Examples
--------
>>> topo = exponential(8)
>>> topo.period
3
>>> topo.edges(1)[:3].tolist()
[[0, 2], [1, 3], [2, 4]]
"""

from __future__ import annotations

import numpy as np

from ..validation import check_int
from .base import EMPTY_EDGES, PeriodicTopology, edges_from_offsets

__all__ = [
    "exponential_rounds",
    "exponential",
    "exponential_two_sided",
    "exponential_base",
    "bipartite_exponential",
    "irregular_exponential",
]


def exponential_rounds(n: int, peers: int = 1, bidirectional: bool = False) -> tuple[tuple[int, ...], ...]:
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


def exponential(n: int, peers: int = 1, bidirectional: bool = False) -> PeriodicTopology:
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
    docs/theory.md section 1b, "The paper's communication graphs". Every node sends to and receives from the same number
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
    steps = [edges_from_offsets(n, r) for r in rounds] or [EMPTY_EDGES]
    kind = "exponential-bidir" if bidirectional else "exponential"
    name = f"{kind}(n={n}, peers={int(peers)})"
    return PeriodicTopology(n, steps, name=name, offsets=rounds or ((),))


def _bipartite_offsets(n: int) -> tuple[int, ...]:
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


def bipartite_exponential(n: int, matching: bool = False) -> PeriodicTopology:
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
    docs/theory.md section 1b, "The paper's communication graphs". Unlike the authors' code, duplicate peers (``n = 4``:
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


def exponential_two_sided(n: int) -> PeriodicTopology:
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
    steps = [edges_from_offsets(n, r) for r in rounds] or [EMPTY_EDGES]
    return PeriodicTopology(n, steps, name=f"exponential-two-sided(n={n})", offsets=tuple(rounds) or ((),))


def exponential_base(n: int, base: int = 2) -> PeriodicTopology:
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
    steps = [edges_from_offsets(n, r) for r in rounds] or [EMPTY_EDGES]
    return PeriodicTopology(n, steps, name=f"exponential-base(n={n}, base={base})", offsets=tuple(rounds) or ((),))


def irregular_exponential(n: int, seed: int | None = None) -> PeriodicTopology:
    """The exponential graph with unequal in-degrees: push-sum weights move.

    Step k: every node i sends to ``i + 2^(k mod m)`` (the paper's schedule,
    docs/theory.md section 1b, "The paper's communication graphs") and every third node (``i % 3 == 0``) also sends to
    ``i - 1``. In-degrees are then unequal, the matrices only column-stochastic,
    and the push-sum weights move (measured: within [0.45, 1.65] for n = 4..64)
    while staying away from zero, so de-biasing ``z = x / w`` matters.

    Parameters
    ----------
    n : int
        Number of nodes, >= 1.
    seed : int, optional
        Ignored (the schedule is deterministic); accepted so that the function
        is a factory ``f(n, seed)`` like the random families.

    Examples
    --------
    >>> t = irregular_exponential(6)
    >>> t.period, t.edges(0)[:4].tolist()
    (3, [[0, 1], [0, 5], [1, 2], [2, 3]])
    """
    base = exponential(n)
    i = np.arange(n)
    extra = i[i % 3 == 0]
    steps = []
    for k in range(base.period):
        e = base.edges(k)
        if n > 1:
            e = np.concatenate([e, np.stack([extra, (extra - 1) % n], axis=1)])
        steps.append(e)
    return PeriodicTopology(n, steps, name=f"exponential-irregular(n={n})")
