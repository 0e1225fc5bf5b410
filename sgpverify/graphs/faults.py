"""Faults: link failures, stragglers and messages lost in flight, wrapped around any topology.

A wrapper keeps the base schedule's edges for each step and removes (link
failures, stragglers) or marks as lost (message loss) some of them; the mask of
:meth:`~.base.Topology.lost` stays aligned with ``edges(k)`` through any
nesting. (Relabelling, :meth:`~.base.Topology.relabel`, is a method of every
topology and lives with the base class.)

Examples
--------
>>> from sgpverify.graphs import complete
>>> t = with_stragglers(with_link_failures(complete(4), 0.0, seed=0), [0], every=2)
>>> [len(t.edges(k)) for k in range(3)]
[12, 9, 12]
"""

from __future__ import annotations

import math
from collections.abc import Iterable

import numpy as np

from ..validation import check_float, check_int, resolve_seed, rng_for
from .base import Topology, canonical

__all__ = ["with_link_failures", "with_stragglers", "with_message_loss"]


@canonical
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


def with_link_failures(topo: Topology, p: float, seed: int | np.random.SeedSequence | None = None) -> Topology:
    """Drop each message independently with probability ``p``.

    A dropped message is never sent: the push weights are computed on the
    surviving edges, so the sender keeps that share and mass is conserved.

    Examples
    --------
    >>> from sgpverify.graphs import complete
    >>> t = with_link_failures(complete(6), 0.5, seed=0)
    >>> 0 < len(t.edges(0)) < 30
    True
    """
    if not isinstance(topo, Topology):
        raise TypeError(f"topo must be a Topology, got {type(topo).__name__}")
    p = check_float("p", p, low=0.0, high=1.0)
    return _LinkFailures(topo, p, seed)


@canonical
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


def with_stragglers(topo: Topology, nodes: Iterable[int], every: int) -> Topology:
    """Straggler nodes send only on steps ``k`` with ``k % every == 0``.

    On the other steps a straggler's outgoing messages are not sent (it keeps
    its whole mass); it still receives.

    Examples
    --------
    >>> from sgpverify.graphs import ring
    >>> t = with_stragglers(ring(4), [0], every=3)
    >>> [len(t.edges(k)) for k in range(4)]
    [4, 3, 3, 4]
    """
    if not isinstance(topo, Topology):
        raise TypeError(f"topo must be a Topology, got {type(topo).__name__}")
    nodes = tuple(sorted({check_int("nodes[i]", v, min_value=0, max_value=topo.n - 1) for v in nodes}))
    every = check_int("every", every, min_value=1)
    return _Stragglers(topo, nodes, every)


@canonical
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


def with_message_loss(topo: Topology, p: float, seed: int | np.random.SeedSequence | None = None) -> Topology:
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
    >>> from sgpverify.graphs import complete
    >>> t = with_message_loss(complete(6), 0.5, seed=0)
    >>> len(t.edges(0)), 0 < int(t.lost(0).sum()) < 30
    (30, True)
    """
    if not isinstance(topo, Topology):
        raise TypeError(f"topo must be a Topology, got {type(topo).__name__}")
    p = check_float("p", p, low=0.0, high=1.0)
    return _MessageLoss(topo, p, seed)
