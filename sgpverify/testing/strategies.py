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

from collections.abc import Callable, Sequence
from typing import Any

import numpy as np
import scipy.sparse as sp
from hypothesis import strategies as st
from numpy.typing import ArrayLike

from .. import graphs
from ..mixing import LinkDelay

#: Kinds drawn by :func:`topologies`: every registered family, a networkx graph, a schedule.
TOPOLOGY_KINDS: tuple[str, ...] = graphs.TOPOLOGY_NAMES + ("networkx", "schedule")

__all__ = [
    "TOPOLOGY_KINDS",
    "node_counts",
    "topologies",
    "column_stochastic_matrices",
    "delay_patterns",
    "permutations",
]


def node_counts(min_n: int = 1, max_n: int = 64) -> st.SearchStrategy[int]:
    """Numbers of nodes in ``[min_n, max_n]``."""
    return st.integers(min_n, max_n)


def _values(space: graphs.Integers | graphs.Floats | graphs.OneOf) -> st.SearchStrategy:
    """The strategy drawing from a parameter's space (:attr:`sgpverify.graphs.Param.space`).

    Examples
    --------
    >>> _values(graphs.family("torus").param("rows").space(6))
    sampled_from((1, 2, 3, 6))
    """
    if isinstance(space, graphs.Integers):
        return st.integers(space.low, space.high)
    if isinstance(space, graphs.Floats):
        return st.floats(space.low, space.high)
    if isinstance(space, graphs.OneOf):
        return st.sampled_from(space.values)
    raise TypeError(f"space must be an Integers, Floats or OneOf, got {type(space).__name__}")


def _family_topology(
    draw: Callable[[st.SearchStrategy[Any]], Any], fam: graphs.Family, n: int, min_n: int, max_n: int, seed: int
) -> graphs.Topology:
    """A topology of a registered family: a valid size in range (else a ring on n), drawn parameters."""
    if fam.sizes is not None:  # constrained sizes: one in [min_n, max_n], if any
        sizes = fam.node_sizes(min_n, max_n)
        if not sizes:
            return graphs.ring(n)
        n = draw(st.sampled_from(sizes))
    kw = {q.name: seed if q.name == "seed" else draw(_values(q.space(n))) for q in fam.params}
    return fam.build(n, **kw)


@st.composite
def topologies(
    draw: Callable[[st.SearchStrategy[Any]], Any],
    min_n: int = 1,
    max_n: int = 64,
    kinds: Sequence[str] | None = None,
    faults: bool = True,
) -> graphs.Topology:
    """Any topology from :mod:`sgpverify.graphs`, optionally with faults.

    Every family of :data:`sgpverify.graphs.FAMILIES` is drawn through its
    declaration (sizes and parameter spaces), plus a networkx graph and a
    schedule.

    Parameters
    ----------
    min_n, max_n : int
        Range of the number of nodes; always respected. Generators with
        constraints (hypercube: a power of two; bipartite: even; torus:
        rows * cols) pick a valid size in range, and fall back to a ring on n
        nodes when the range holds none.
    kinds : sequence of str, optional
        Restrict to these generator names (kebab case, as in the CLI), among
        :data:`TOPOLOGY_KINDS`.
    faults : bool
        Sometimes wrap the topology with link failures or stragglers.
    """
    kinds = list(kinds) if kinds is not None else list(TOPOLOGY_KINDS)
    n = draw(st.integers(min_n, max_n))
    kind = draw(st.sampled_from(kinds))
    seed = draw(st.integers(0, 2**32 - 1))
    if kind in graphs.TOPOLOGY_NAMES:
        topo = _family_topology(draw, graphs.family(kind), n, min_n, max_n, seed)
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
def column_stochastic_matrices(
    draw: Callable[[st.SearchStrategy[Any]], Any],
    min_n: int = 1,
    max_n: int = 16,
    density: float | None = None,
    sparse: bool = False,
    positive_diagonal: bool = True,
) -> np.ndarray | sp.csr_array:
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
def delay_patterns(
    draw: Callable[[st.SearchStrategy[Any]], Any], P: ArrayLike, tau: int | None = None, max_tau: int = 4
) -> tuple[int, np.ndarray]:
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


def link_delays(P: ArrayLike, tau: int | None = None, max_tau: int = 4) -> st.SearchStrategy[LinkDelay]:
    """A :class:`~sgpverify.mixing.LinkDelay` model drawn by :func:`delay_patterns`."""
    return delay_patterns(P, tau, max_tau).map(lambda td: LinkDelay(td[1], td[0]))


def permutations(n: int) -> st.SearchStrategy[np.ndarray]:
    """Permutations of ``range(n)`` as int arrays."""
    return st.permutations(list(range(n))).map(lambda p: np.asarray(p, dtype=np.int64))
