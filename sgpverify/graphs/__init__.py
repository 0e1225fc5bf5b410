"""Time-varying directed communication topologies (peer schedules).

A :class:`Topology` answers, for iteration ``k``, who sends to whom: an edge
array of shape ``(m, 2)`` with rows ``(sender, receiver)``, sorted, without
self-loops or duplicates. It also has ``n`` (number of nodes) and ``period``
(an int, or None for random or aperiodic schedules). This package knows nothing
of weights: :mod:`sgpverify.mixing` turns edges into mixing matrices.

Random topologies are seeded and give random access by step: ``edges(k)`` is a
pure function of ``(seed, k)``, so the same object always answers the same.

The package keeps its generators as networkx does, one module per kind:

- :mod:`.base`: :class:`Topology`, :class:`PeriodicTopology`, edge arrays
  (:func:`check_edges`, :func:`normalize_edges`, :func:`edges_from_offsets`),
  :func:`is_strongly_connected`;
- :mod:`.exponential_graphs`: the paper's exponential graph and its variants;
- :mod:`.classic`: ring, complete, hypercube, torus, star, networkx graphs;
- :mod:`.random_graphs`: Erdos-Renyi and random-peer schedules;
- :mod:`.schedules`: switching between topologies over time;
- :mod:`.faults`: link failures, stragglers, message loss;
- :mod:`.registry`: the families by name (:data:`FAMILIES`, :func:`by_name`,
  :func:`family`, :func:`takes`), read by the command line, the suite and the
  property-test strategies.

Every public name is importable from here (``sgpverify.graphs.exponential``).

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

from .base import PeriodicTopology, Topology, check_edges, edges_from_offsets, is_strongly_connected, normalize_edges
from .classic import complete, from_networkx, hypercube, ring, star, torus
from .exponential_graphs import (
    bipartite_exponential,
    exponential,
    exponential_base,
    exponential_rounds,
    exponential_two_sided,
    irregular_exponential,
)
from .faults import with_link_failures, with_message_loss, with_stragglers
from .random_graphs import erdos_renyi, random_peer
from .registry import FAMILIES, TOPOLOGY_NAMES, Family, Floats, Integers, OneOf, Param, by_name, family, takes
from .schedules import schedule

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
    # not in the single module's __all__, used by mixing and engine
    "normalize_edges",
    # new with the package
    "irregular_exponential",
    "FAMILIES",
    "Family",
    "Param",
    "Integers",
    "Floats",
    "OneOf",
    "family",
    "takes",
]
