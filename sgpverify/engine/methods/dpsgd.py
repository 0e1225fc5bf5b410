"""D-PSGD: gossip with doubly stochastic Metropolis weights, then the local step."""

from __future__ import annotations

from typing import Any

import numpy as np

from .base import MethodState, mix

__all__ = ["DPSGD"]


class DPSGD:
    """Decentralized parallel SGD (Lian, Zhang, Zhang, Hsieh, Zhang and Liu, NeurIPS 2017).

    With the doubly stochastic Metropolis matrices ``W^(k)`` of the topology
    (:func:`sgpverify.mixing.metropolis_matrix`) and the stochastic gradients at the nodes'
    own points (before the gossip)::

        x^{k+1} = W^(k) x^k - gamma g(x^k).

    No push-sum weights: ``W`` keeps them at 1. ``simulate`` runs the engine's fused step
    (``fused = "dpsgd"``); ``DPSGD(fused=False)`` runs this code through the generic loop, as
    for a user's method (see :class:`~sgpverify.engine.methods.SGP`).
    """

    name = "dpsgd"
    weights = "metropolis"
    fused: str | None = "dpsgd"

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
        x = mix(P, state.vectors["x"])
        x[:n] -= gamma * g
        state.vectors["x"] = x
        state.grads = g

    def tracking_error(self, state: MethodState) -> None:
        return None

    def __repr__(self) -> str:
        return "DPSGD()" if self.fused else "DPSGD(fused=False)"
