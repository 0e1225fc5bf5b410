"""SGP and tau-OSGP: push-sum gossip of ``x - gamma g`` with de-biased gradients."""

from __future__ import annotations

from typing import Any

import numpy as np

from .base import BuiltinMethod, MethodState, mix

__all__ = ["SGP"]


class SGP(BuiltinMethod):
    """Stochastic Gradient Push (Assran, Loizou, Ballas and Rabbat, ICML 2019, Algorithm 1).

    With the column-stochastic push matrices ``P^(k)`` of the schedule and the stochastic
    gradients ``g`` at the de-biased points ``z = x / w``::

        x^{k+1} = P^(k) (x^k - gamma g(z^k)),   w^{k+1} = P^(k) w^k,   z = x / w,

    from ``w^0 = 1``. On a delayed schedule (``tau > 0``, the delay-augmented matrices: rows
    ``0..n-1`` the real nodes, the others messages in flight) it is tau-OSGP, the same class: the
    messages carry ``x - gamma g`` and ``w`` with their delays (docs/theory.md sections 1, 1b).

    ``step`` writes the recursion in plain NumPy, one sparse product per step. ``simulate``
    runs the engine's fused step (``fused = "sgp"``, :mod:`sgpverify.engine.step`: vectorised,
    compiled with numba where installed, an inbox ring for the delays) for it: the same
    recursion, the same gradient draws. ``SGP(fused=False)`` runs this code instead (the
    generic loop, :func:`~sgpverify.engine.methods.run_method`), as for a user's method: an
    independent second computation of the same iterates, equal to round-off
    (``tests/test_builtin_methods.py``). The fused step's own options (``momentum``,
    ``nesterov``, ``send_before_step``, ``debias=False``, ``record_states``) are its alone.

    Examples
    --------
    >>> import numpy as np, sgpverify as sv
    >>> prob = sv.problems.QuadraticCosine(n=8, d=4, seed=0)
    >>> topo = sv.graphs.random_peer(8, seed=0)
    >>> fast = sv.simulate(prob, topo, step_size=0.1, n_iter=50, algorithm=SGP())
    >>> plain = sv.simulate(prob, topo, step_size=0.1, n_iter=50, algorithm=SGP(fused=False))
    >>> bool(np.abs(fast.z - plain.z).max() < 1e-12)
    True
    """

    name = "sgp"
    weights = "push"
    fused: str | None = "sgp"

    def start(self, n: int, X0: np.ndarray, grad: Any) -> MethodState:
        w = np.zeros(X0.shape[:2])
        w[:n] = 1.0
        return MethodState(n, {"x": X0.copy()}, {"w": w}, grads=None, applied=np.zeros(X0.shape[1:]))

    def points(self, state: MethodState, n: int) -> np.ndarray:
        return state.vectors["x"][:n] * (1.0 / state.scalars["w"][:n])[:, :, None]

    def step(self, k: int, P: Any, state: MethodState, gamma: float, grad: Any) -> None:
        g = self.gradients(state, grad)
        sent = state.vectors["x"].copy()
        sent[: state.n] -= gamma * g
        state.extra["sent"] = sent  # what the messages carry (the bookkeeping of lost ones)
        state.vectors["x"] = mix(P, sent)
        state.scalars["w"] = mix(P, state.scalars["w"])

    def __repr__(self) -> str:
        return "SGP()" if self.fused else "SGP(fused=False)"
