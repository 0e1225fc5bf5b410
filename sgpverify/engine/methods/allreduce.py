"""AllReduce SGD: the local step, then exact averaging, every step."""

from __future__ import annotations

from typing import Any

import numpy as np

from .base import MethodState

__all__ = ["AllReduce", "average_nodes"]


def average_nodes(state: MethodState) -> None:
    """Replace every real node's ``x`` by the nodes' average (an exact all-reduce)."""
    x = state.vectors["x"]
    n = state.n
    x[:n] = x[:n].mean(axis=0, keepdims=True)


class AllReduce:
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

    def __init__(self, *, fused: bool = True) -> None:
        if not fused:
            self.fused = None

    def start(self, n: int, X0: np.ndarray, grad: Any) -> MethodState:
        return MethodState(n, {"x": X0.copy()}, {}, grads=None, applied=np.zeros(X0.shape[1:]))

    def points(self, state: MethodState, n: int) -> np.ndarray:
        return state.vectors["x"][:n]

    def step(self, k: int, P: Any, state: MethodState, gamma: float, grad: Any) -> None:
        n = state.n
        g = np.asarray(grad(self.points(state, n)), dtype=float)
        state.applied += g.sum(axis=0)
        state.vectors["x"][:n] -= gamma * g
        average_nodes(state)
        state.grads = g

    def tracking_error(self, state: MethodState) -> None:
        return None

    def __repr__(self) -> str:
        return "AllReduce()" if self.fused else "AllReduce(fused=False)"
