"""Public Hypothesis strategies for property-testing mixing matrices and schedules.

Use them in your own tests to check that *your* matrices and schedules satisfy
what SGP needs, or that your code treats every such input correctly::

    from hypothesis import given
    from sgpverify.testing import strategies as sgst

    @given(sgst.column_stochastic_matrices(max_n=12))
    def test_my_gossip_conserves_mass(P):
        x = np.random.default_rng(0).normal(size=P.shape[0])
        assert np.isclose((P @ x).sum(), x.sum())

Requires the ``test`` extra (hypothesis).
"""

from __future__ import annotations

import numpy as np
import scipy.sparse as sp
from hypothesis import strategies as st

from .. import graphs
from ..mixing import LinkDelay

#: Kinds drawn by :func:`topologies`: every generator, a networkx graph, a schedule.
TOPOLOGY_KINDS = graphs.TOPOLOGY_NAMES + ("networkx", "schedule")

__all__ = [
    "TOPOLOGY_KINDS",
    "node_counts",
    "topologies",
    "column_stochastic_matrices",
    "delay_patterns",
    "permutations",
]


def node_counts(min_n=1, max_n=64):
    """Numbers of nodes in ``[min_n, max_n]``."""
    return st.integers(min_n, max_n)


@st.composite
def topologies(draw, min_n=1, max_n=64, kinds=None, faults=True):
    """Any topology from :mod:`sgpverify.graphs`, optionally with faults.

    Parameters
    ----------
    min_n, max_n : int
        Range of the number of nodes; always respected. Generators with
        constraints (hypercube: a power of two; bipartite: even; torus:
        rows * cols) pick a valid size in range, and fall back to a ring on n
        nodes when the range holds none.
    kinds : sequence of str, optional
        Restrict to these generator names (kebab case, as in the CLI).
    faults : bool
        Sometimes wrap the topology with link failures or stragglers.
    """
    kinds = list(kinds) if kinds is not None else list(TOPOLOGY_KINDS)
    n = draw(st.integers(min_n, max_n))
    kind = draw(st.sampled_from(kinds))
    seed = draw(st.integers(0, 2**32 - 1))
    if kind == "exponential":
        topo = graphs.exponential(n, peers=draw(st.integers(1, max(1, n - 1))))
    elif kind == "exponential-bidir":
        topo = graphs.exponential(n, peers=draw(st.integers(1, max(1, n - 1))), bidirectional=True)
    elif kind == "exponential-two-sided":
        topo = graphs.exponential_two_sided(n)
    elif kind == "exponential-base":
        topo = graphs.exponential_base(n, draw(st.integers(2, 5)))
    elif kind in ("bipartite-exponential", "bipartite-matching"):
        evens = [m for m in range(max(2, min_n), max_n + 1) if m % 2 == 0]
        matching = kind == "bipartite-matching"
        topo = graphs.bipartite_exponential(draw(st.sampled_from(evens)), matching) if evens else graphs.ring(n)
    elif kind == "ring-alternating":
        topo = graphs.ring(n, alternating=True)
    elif kind == "ring":
        topo = graphs.ring(n)
    elif kind == "ring-bidir":
        topo = graphs.ring(n, bidirectional=True)
    elif kind == "complete":
        topo = graphs.complete(n)
    elif kind == "hypercube":
        powers = [1 << b for b in range(max_n.bit_length()) if min_n <= 1 << b <= max_n]
        topo = graphs.hypercube(draw(st.sampled_from(powers))) if powers else graphs.ring(n)
    elif kind == "torus":
        rows = draw(st.sampled_from([d for d in range(1, n + 1) if n % d == 0]))
        topo = graphs.torus(rows, n // rows)
    elif kind == "star":
        topo = graphs.star(n)
    elif kind == "erdos-renyi":
        topo = graphs.erdos_renyi(n, draw(st.floats(0.0, 1.0)), seed=seed)
    elif kind == "random-peer":
        topo = graphs.random_peer(n, seed=seed)
    elif kind == "networkx":
        import networkx as nx

        p = draw(st.floats(0.0, 1.0))
        topo = graphs.from_networkx(nx.gnp_random_graph(n, p, seed=seed, directed=draw(st.booleans())))
    elif kind == "schedule":
        parts = [(graphs.exponential(n), draw(st.integers(1, 3))), graphs.random_peer(n, seed=seed)]
        topo = graphs.schedule(parts, repeat=draw(st.booleans()))
    else:
        raise ValueError(f"kinds must be among {', '.join(TOPOLOGY_KINDS)}, got {kind!r}")
    if faults and draw(st.booleans()):
        if draw(st.booleans()):
            topo = graphs.with_link_failures(topo, draw(st.floats(0.0, 1.0)), seed=seed)
        else:
            nodes = draw(st.lists(st.integers(0, topo.n - 1), max_size=3))
            topo = graphs.with_stragglers(topo, nodes, every=draw(st.integers(1, 4)))
    return topo


@st.composite
def column_stochastic_matrices(draw, min_n=1, max_n=16, density=None, sparse=False, positive_diagonal=True):
    """Random non-negative column-stochastic matrices (P[i, j]: share j sends to i).

    Each column draws a random support (always containing the diagonal when
    ``positive_diagonal``) and random positive weights normalised to sum to 1.
    Returned dense (numpy) or as a CSR array with ``sparse=True``.
    """
    n = draw(st.integers(min_n, max_n))
    seed = draw(st.integers(0, 2**32 - 1))
    rng = np.random.default_rng(seed)
    dens = draw(st.floats(0.0, 1.0)) if density is None else density
    mask = rng.random((n, n)) < dens
    if positive_diagonal:
        np.fill_diagonal(mask, True)
    else:
        empty = ~mask.any(axis=0)
        mask[rng.integers(0, n, size=n)[empty], np.flatnonzero(empty)] = True
    W = np.where(mask, rng.uniform(0.05, 1.0, size=(n, n)), 0.0)
    W /= W.sum(axis=0, keepdims=True)
    return sp.csr_array(W) if sparse else W


@st.composite
def delay_patterns(draw, P, tau=None, max_tau=4):
    """Integer delays in ``0..tau`` with the sparsity of P (receiver, sender).

    Returns ``(tau, D)`` with D a dense int array (diagonal zero).
    """
    P = sp.coo_array(P)
    t = draw(st.integers(0, max_tau)) if tau is None else tau
    seed = draw(st.integers(0, 2**32 - 1))
    rng = np.random.default_rng(seed)
    D = np.zeros(P.shape, dtype=np.int64)
    off = P.row != P.col
    D[P.row[off], P.col[off]] = rng.integers(0, t + 1, size=int(off.sum()))
    return t, D


def link_delays(P, tau=None, max_tau=4):
    """A :class:`~sgpverify.mixing.LinkDelay` model drawn by :func:`delay_patterns`."""
    return delay_patterns(P, tau, max_tau).map(lambda td: LinkDelay(td[1], td[0]))


def permutations(n):
    """Permutations of ``range(n)`` as int arrays."""
    return st.permutations(list(range(n))).map(lambda p: np.asarray(p, dtype=np.int64))
