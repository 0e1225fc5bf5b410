"""AllReduce SGD: the local step, then exact averaging, every step."""

from __future__ import annotations

from typing import Any

from .base import MethodState, PlainMethod

__all__ = ["AllReduce", "average_nodes"]


def average_nodes(state: MethodState) -> None:
    """Replace every real node's ``x`` by the nodes' average (an exact all-reduce)."""
    x = state.vectors["x"]
    n = state.n
    x[:n] = x[:n].mean(axis=0, keepdims=True)


class AllReduce(PlainMethod):
    """Parallel SGD with an exact average every step (the centralised baseline)::

        x^{k+1} = mean_i (x_i^k - gamma g_i(x_i^k))   on every node.

    No gossip matrices (``weights = None``: the engine passes the identity, and the topology
    plays no part). ``simulate`` runs the engine's fused step (``fused = "allreduce"``);
    ``AllReduce(fused=False)`` runs this code through the generic loop, as for a user's method
    (see :class:`~sgpverify.engine.methods.SGP`).
    """

    name = "allreduce"
    weights = None
    fused: str | None = "allreduce"

    def step(self, k: int, P: Any, state: MethodState, gamma: float, grad: Any) -> None:
        n = state.n
        g = self.gradients(state, grad)
        state.vectors["x"][:n] -= gamma * g
        average_nodes(state)

    def __repr__(self) -> str:
        return "AllReduce()" if self.fused else "AllReduce(fused=False)"
