"""Random topologies: a fresh digraph each step, seeded, with random access by step.

``edges(k)`` is a pure function of ``(seed, k)``, so the same object always
answers the same, in any order of queries.

Examples
--------
>>> topo = random_peer(5, seed=0)
>>> topo.period, bool((topo.edges(9) == random_peer(5, seed=0).edges(9)).all())
(None, True)
"""

from __future__ import annotations

import numpy as np

from ..validation import check_float, check_int, resolve_seed, rng_for
from .base import EMPTY_EDGES, Topology, canonical, normalize_edges

__all__ = ["erdos_renyi", "random_peer"]


@canonical
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
            return EMPTY_EDGES
        m = int(rng.binomial(total, self.p))
        codes = np.sort(rng.choice(total, size=m, replace=False)).astype(np.int64)
        src, r = np.divmod(codes, n - 1)
        dst = r + (r >= src)
        return normalize_edges(src, dst, n)


def erdos_renyi(n: int, p: float, seed: int | np.random.SeedSequence | None = None) -> Topology:
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


@canonical
class _RandomPeer(_RandomTopology):
    domain = "random-peer"
    one_peer = True
    #: steps drawn together from one stream (random access by block, cached)
    BLOCK = 64

    def __init__(self, n, seed):
        super().__init__(n, seed)
        self.name = f"random-peer(n={n})"
        self._block = (None, None)

    def _edges(self, k):
        n = self.n
        if n == 1:
            return EMPTY_EDGES
        # src = 0..n-1, one distinct non-self peer each: already sorted and unique
        out = np.empty((n, 2), dtype=np.int64)
        out[:, 0] = np.arange(n)
        out[:, 1] = self._peers(k)
        out.setflags(write=False)
        return out

    def _peers(self, k):
        n = self.n
        b, r = divmod(k, self.BLOCK)
        if self._block[0] != b:
            # int32 when it holds n (half the memory: 256 MB a block at n = 10^6); numpy
            # draws the same values for either dtype below 2^32 (tested)
            dt = np.int32 if n < 2**31 else np.int64
            offs = rng_for(self.seed, self.domain, b).integers(1, n, size=(self.BLOCK, n), dtype=dt)
            self._block = (b, offs)
        offs = self._block[1][r]
        if n <= 2**30:  # i + offset < 2^31: int32 arithmetic, about 7 times faster than int64's
            dst = np.arange(n, dtype=np.int32)
            dst += offs
        else:
            dst = np.arange(n, dtype=np.int64) + offs
        dst %= n
        return dst

    def peers(self, k: int) -> np.ndarray:
        """The receiver of each node's one message at step k: ``edges(k)[:, 1]``, computed
        without the edge array, as int32 while n <= 2^30 (the engine's gossip reads it).

        Examples
        --------
        >>> topo = random_peer(5, seed=0)
        >>> bool((topo.peers(3) == topo.edges(3)[:, 1]).all())
        True
        """
        k = check_int("k", k, min_value=0)
        if self.n == 1:
            return np.zeros(0, dtype=np.int32)
        return self._peers(k)


def random_peer(n: int, seed: int | np.random.SeedSequence | None = None) -> Topology:
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
