"""Local SGD: local steps, and an exact average every ``average_every`` steps."""

from __future__ import annotations

from typing import Any

from ...validation import check_int
from .allreduce import average_nodes
from .base import MethodState, PlainMethod

__all__ = ["LocalSGD"]


class LocalSGD(PlainMethod):
    """Local SGD (periodic averaging; Stich, ICLR 2019) with period ``H = average_every``::

        x_i^{k+1} = x_i^k - gamma g_i(x_i^k),   then, when (k + 1) % H == 0, x_i^{k+1} <- mean_j x_j^{k+1}.

    ``H = 1`` is :class:`~sgpverify.engine.methods.AllReduce`. No gossip matrices
    (``weights = None``). ``simulate`` runs the engine's fused step (``fused = "local-sgd"``,
    ``simulate(..., algorithm="local-sgd", average_every=H)`` is the same run);
    ``LocalSGD(H, fused=False)`` runs this code through the generic loop, as for a user's
    method (see :class:`~sgpverify.engine.methods.SGP`).

    Parameters
    ----------
    average_every : int
        H >= 1 (default 10).
    fused : bool
        Let the engine run its fused step (True, the default) or this code.
    """

    name = "local-sgd"
    weights = None
    fused: str | None = "local-sgd"

    def __init__(self, average_every: int = 10, *, fused: bool = True) -> None:
        super().__init__(fused=fused)
        self.average_every = check_int("average_every", average_every, min_value=1)

    def step(self, k: int, P: Any, state: MethodState, gamma: float, grad: Any) -> None:
        n = state.n
        g = self.gradients(state, grad)
        state.vectors["x"][:n] -= gamma * g
        if (k + 1) % self.average_every == 0:
            average_nodes(state)

    def __repr__(self) -> str:
        return f"LocalSGD(average_every={self.average_every}{'' if self.fused else ', fused=False'})"
