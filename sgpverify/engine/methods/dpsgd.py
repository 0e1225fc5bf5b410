"""D-PSGD: gossip with doubly stochastic Metropolis weights, then the local step."""

from __future__ import annotations

from typing import Any

from .base import MethodState, PlainMethod, mix

__all__ = ["DPSGD"]


class DPSGD(PlainMethod):
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

    def step(self, k: int, P: Any, state: MethodState, gamma: float, grad: Any) -> None:
        n = state.n
        g = self.gradients(state, grad)
        x = mix(P, state.vectors["x"])
        x[:n] -= gamma * g
        state.vectors["x"] = x

    def __repr__(self) -> str:
        return "DPSGD()" if self.fused else "DPSGD(fused=False)"
