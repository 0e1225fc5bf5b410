"""Schedules that switch between topologies over time.

Examples
--------
>>> from sgpverify.graphs import ring
>>> s = schedule([(ring(3), 2), ring(3, bidirectional=True)])
>>> [len(s.edges(k)) for k in range(3)], s.period
([3, 3, 6], 3)
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from functools import reduce

import numpy as np

from ..validation import check_int
from .base import Topology, canonical

__all__ = ["schedule"]


@canonical
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


def schedule(parts: Sequence[Topology | tuple[Topology, int]], repeat: bool = True) -> Topology:
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
    >>> from sgpverify.graphs import complete, ring
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
