"""The registry of topology families: each family declared once.

A :class:`Family` holds a family's kebab-case name (as on the command line),
its builder, the parameters it takes (with defaults, constraints and the values
property tests draw), the sizes it accepts and a one-line description.
:data:`FAMILIES` holds them all. Everything that knows topologies by name
reads it: :func:`by_name` and :data:`TOPOLOGY_NAMES` here,
:func:`sgpverify.testing.strategies.topologies`, the command line, the suite.

Parameters a family may take are those of :func:`by_name`: ``peers``, ``p``,
``rows``, ``base``, ``seed``. Use :func:`takes` (or ``family(name).params``)
to know which ones a family takes instead of listing names.

Adding a topology
-----------------
Write its generator in the module of its kind (say ``classic.py``, with a
numpydoc docstring and a doctest), then add one :class:`Family` to
``_DECLARED`` below. Nothing else: it then appears in :data:`TOPOLOGY_NAMES`,
:func:`by_name`, the command line's ``--topology`` choices and the property
tests (which draw sizes from ``sizes`` and parameters from each ``space``), and
the registry tests in ``tests/test_graphs.py`` hold it to its declaration
(every size it accepts builds, every other is refused naming ``nodes``; the
name of what it builds starts with its own; the strategies draw it)::

    Family(
        "wheel",
        wheel,  # wheel(n): a hub and a bidirectional ring
        "static wheel: node 0 exchanges with all, the others with their ring neighbours",
        nodes="an integer >= 4",
        sizes=lambda low, high: range(max(4, low), high + 1),
    ),
    Family(
        "ring-k",
        ring_k,  # ring_k(n, peers=1): i -> i + 1, ..., i + peers
        "static ring to the next peers nodes",
        (_PEERS,),  # takes by_name's peers (default 1, drawn in [1, n - 1])
    ),

A parameter is one of :func:`by_name`'s keywords; a family needing another one
(a degree, say) adds that keyword to :func:`by_name` (same default as its
:class:`Param`, as a test checks) and an option to the command line.

Examples
--------
>>> family("torus").params[0].name, takes("exponential", "peers"), takes("ring", "peers")
('rows', True, False)
>>> [n for n in family("hypercube").node_sizes(3, 20)]
[4, 8, 16]
"""

from __future__ import annotations

import math
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from types import MappingProxyType

import numpy as np

from ..validation import check_int
from .base import Topology
from .classic import complete, hypercube, ring, star, torus
from .exponential_graphs import (
    bipartite_exponential,
    exponential,
    exponential_base,
    exponential_two_sided,
    irregular_exponential,
)
from .random_graphs import erdos_renyi, random_peer

__all__ = [
    "Integers",
    "Floats",
    "OneOf",
    "Param",
    "Family",
    "FAMILIES",
    "TOPOLOGY_NAMES",
    "family",
    "takes",
    "by_name",
]


# ---------------------------------------------------------------- values property tests draw


@dataclass(frozen=True)
class Integers:
    """The integers in ``[low, high]`` (values a parameter is drawn from in property tests)."""

    low: int
    high: int


@dataclass(frozen=True)
class Floats:
    """The floats in ``[low, high]`` (values a parameter is drawn from in property tests)."""

    low: float
    high: float


@dataclass(frozen=True)
class OneOf:
    """One of ``values`` (values a parameter is drawn from in property tests)."""

    values: tuple


#: What :attr:`Param.space` returns: data, so that this package needs no Hypothesis.
Space = Integers | Floats | OneOf


# ---------------------------------------------------------------- declarations


@dataclass(frozen=True)
class Param:
    """A parameter a family takes (one of :func:`by_name`'s keywords).

    Attributes
    ----------
    name : str
        ``"peers"``, ``"p"``, ``"rows"``, ``"base"`` or ``"seed"``.
    default : object
        The value :func:`by_name` passes when it is not given (None: the
        builder computes it from ``n``, as ``constraint`` says).
    constraint : str
        The values allowed, in the words of the error grammar.
    space : callable, optional
        ``space(n) -> Integers | Floats | OneOf``: the values property tests
        draw for a topology on n nodes. None for ``seed`` (the strategy draws
        one seed and shares it with the faults it adds).
    compute : callable, optional
        ``compute(n)``: the value the builder takes on n nodes when ``default``
        is None and the parameter is not given (see :meth:`default_for`).
    """

    name: str
    default: object
    constraint: str
    space: Callable[[int], Space] | None = None
    compute: Callable[[int], object] | None = None

    def default_for(self, n: int) -> object:
        """The value used on ``n`` nodes when the parameter is not given (for help texts and reports).

        Examples
        --------
        >>> round(family("erdos-renyi").param("p").default_for(8), 5), family("torus").param("rows").default_for(12)
        (0.51986, 3)
        """
        return self.compute(n) if self.default is None and self.compute is not None else self.default


@dataclass(frozen=True)
class Family:
    """A topology family: a name, a builder and what the builder takes.

    Attributes
    ----------
    name : str
        Kebab-case name, as on the command line; the name of every topology
        it builds starts with ``name + "("``.
    build : callable
        ``build(n, **{q.name: value for q in params})``: the topology on n nodes.
    description : str
        One line, for help texts and docs.
    params : tuple of Param
        The parameters ``build`` takes beside ``n`` (none by default).
    nodes : str
        The sizes accepted, in the words of the error grammar.
    sizes : callable, optional
        ``sizes(low, high)``: the accepted sizes in ``[low, high]``, increasing;
        None when every ``n >= 1`` is accepted.
    """

    name: str
    build: Callable[..., Topology]
    description: str
    params: tuple[Param, ...] = ()
    nodes: str = "an integer >= 1"
    sizes: Callable[[int, int], Sequence[int]] | None = None

    def takes(self, param: str) -> bool:
        """Whether the family takes the parameter ``param`` (a :func:`by_name` keyword)."""
        return any(q.name == param for q in self.params)

    def param(self, name: str) -> Param:
        """The parameter called ``name``; ValueError if the family does not take it."""
        for q in self.params:
            if q.name == name:
                return q
        names = ", ".join(q.name for q in self.params) or "none"
        raise ValueError(f"param must be one of the parameters of {self.name} ({names}), got {name!r}")

    def node_sizes(self, low: int, high: int) -> Sequence[int]:
        """The sizes in ``[low, high]`` the family accepts, increasing (none below 1)."""
        low = max(int(low), 1)
        if self.sizes is None:
            return range(low, int(high) + 1)
        return self.sizes(low, int(high))

    def accepts(self, n: int) -> bool:
        """Whether ``n`` nodes is a size the family builds (see ``nodes``)."""
        return n in self.node_sizes(n, n)


def _even_sizes(low: int, high: int) -> range:
    return range(max(2, low + low % 2), high + 1, 2)


def _power_of_two_sizes(low: int, high: int) -> list[int]:
    return [1 << b for b in range(high.bit_length()) if low <= 1 << b <= high]


def _divisors(n: int) -> OneOf:
    return OneOf(tuple(d for d in range(1, n + 1) if n % d == 0))


def _exponential_bidir(n: int, peers: int = 1) -> Topology:
    return exponential(n, peers=peers, bidirectional=True)


def _exponential_base(n: int, base: int = 3) -> Topology:
    return exponential_base(n, base)


def _bipartite_matching(n: int) -> Topology:
    return bipartite_exponential(n, matching=True)


def _ring_bidir(n: int) -> Topology:
    return ring(n, bidirectional=True)


def _ring_alternating(n: int) -> Topology:
    return ring(n, alternating=True)


def _default_rows(n: int) -> int:
    return max(d for d in range(1, math.isqrt(n) + 1) if n % d == 0)


def _default_edge_prob(n: int) -> float:
    return 1.0 if n < 3 else min(1.0, 2 * math.log(n) / n)


def _torus(n: int, rows: int | None = None) -> Topology:
    if rows is None:
        rows = _default_rows(n)
    rows = check_int("rows", rows, min_value=1)
    if n % rows:
        raise ValueError(f"rows must divide nodes = {n}, got {rows}")
    return torus(rows, n // rows)


def _erdos_renyi(n: int, p: float | None = None, seed: int | np.random.SeedSequence | None = None) -> Topology:
    if p is None:
        p = _default_edge_prob(n)
    return erdos_renyi(n, p, seed=seed)


_PEERS = Param("peers", 1, "an integer in [1, nodes - 1]", lambda n: Integers(1, max(1, n - 1)))
_SEED = Param("seed", None, "an integer >= 0, a SeedSequence, or None (fresh entropy, fixed once)")

#: The families, in the order of :data:`TOPOLOGY_NAMES` (declare a new one here).
_DECLARED = (
    Family("exponential", exponential, "the paper's exponential graph: i -> i + j (peers+1)^(k mod m)", (_PEERS,)),
    Family("exponential-bidir", _exponential_bidir, "exponential graph alternating +2^i and -2^i", (_PEERS,)),
    Family("exponential-two-sided", exponential_two_sided, "exponential graph sending to i + 2^i and i - 2^i"),
    Family(
        "exponential-base",
        _exponential_base,
        "exponential graph in base b: i -> i + b^(k mod m)",
        (Param("base", 3, "an integer >= 2", lambda n: Integers(2, 5)),),
    ),
    Family(
        "bipartite-exponential",
        bipartite_exponential,
        "the authors' bipartite exponential graph: every node sends to i + o_k, o_k odd",
        nodes="an even integer >= 2",
        sizes=_even_sizes,
    ),
    Family(
        "bipartite-matching",
        _bipartite_matching,
        "bipartite exponential graph as a perfect matching: odd i <-> i + o_k",
        nodes="an even integer >= 2",
        sizes=_even_sizes,
    ),
    Family("ring", ring, "static directed ring i -> i + 1"),
    Family("ring-bidir", _ring_bidir, "static ring i -> i + 1 and i -> i - 1"),
    Family("ring-alternating", _ring_alternating, "ring alternating i -> i + 1 and i -> i - 1 (period 2)"),
    Family("complete", complete, "static complete digraph"),
    Family(
        "hypercube",
        hypercube,
        "static hypercube i <-> i XOR 2^b",
        nodes="a power of two",
        sizes=_power_of_two_sizes,
    ),
    Family(
        "torus",
        _torus,
        "static 2-D torus, rows x (nodes / rows), 4 neighbours each",
        (
            Param(
                "rows",
                None,
                "an integer >= 1 dividing nodes (default: the largest divisor of nodes not above sqrt(nodes))",
                _divisors,
                _default_rows,
            ),
        ),
    ),
    Family("star", star, "static star: node 0 exchanges with every other node"),
    Family(
        "erdos-renyi",
        _erdos_renyi,
        "a fresh random digraph each step, each ordered pair an edge with probability p",
        (
            Param(
                "p",
                None,
                "a number in [0, 1] (default: min(1, 2 ln(nodes) / nodes), 1 below 3 nodes)",
                lambda n: Floats(0.0, 1.0),
                _default_edge_prob,
            ),
            _SEED,
        ),
    ),
    Family("random-peer", random_peer, "each node sends to one uniformly random other node each step", (_SEED,)),
    Family(
        "exponential-irregular",
        irregular_exponential,
        "exponential graph plus i -> i - 1 for i % 3 == 0: unequal in-degrees, push-sum weights move",
    ),
)

#: Every family by name, in declaration order (read-only).
FAMILIES: Mapping[str, Family] = MappingProxyType({f.name: f for f in _DECLARED})

#: Generator names accepted by :func:`by_name` and the command line (kebab case).
TOPOLOGY_NAMES: tuple[str, ...] = tuple(FAMILIES)


def family(name: str) -> Family:
    """The family registered as ``name``.

    Raises
    ------
    ValueError
        Listing the registered names, if ``name`` is not one.

    Examples
    --------
    >>> f = family("erdos-renyi")
    >>> [q.name for q in f.params], f.takes("rows")
    (['p', 'seed'], False)
    """
    if name not in TOPOLOGY_NAMES:
        raise ValueError(f"topology must be one of {', '.join(TOPOLOGY_NAMES)}, got {name!r}")
    return FAMILIES[name]


def takes(name: str, param: str) -> bool:
    """Whether the family ``name`` takes the :func:`by_name` keyword ``param``.

    For callers that pass a setting only where it applies (the suite's
    ``peers`` and ``rows``, the command line's options).

    Examples
    --------
    >>> takes("exponential-bidir", "peers"), takes("torus", "rows"), takes("exponential-irregular", "peers")
    (True, True, False)
    """
    return family(name).takes(param)


def by_name(
    name: str,
    n: int,
    *,
    peers: int = 1,
    seed: int | np.random.SeedSequence | None = None,
    p: float | None = None,
    rows: int | None = None,
    base: int = 3,
) -> Topology:
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

    Notes
    -----
    Reads :data:`FAMILIES`: the family's builder gets the keywords it takes
    (``family(name).params``); ``seed``, ``p``, ``rows`` and ``base`` are
    ignored by families that do not take them, while ``peers`` other than 1
    is refused.

    Examples
    --------
    >>> by_name("exponential-bidir", 8).offsets
    ((1,), (7,), (2,), (6,), (4,))
    """
    fam = family(name)
    n = check_int("nodes", n, min_value=1)
    if peers != 1 and not fam.takes("peers"):
        raise ValueError(f"peers applies only to exponential topologies, got peers = {peers} for {name}")
    given = {"peers": peers, "seed": seed, "p": p, "rows": rows, "base": base}
    return fam.build(n, **{q.name: given[q.name] for q in fam.params})
