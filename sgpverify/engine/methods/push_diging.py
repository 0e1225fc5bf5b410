"""Push-DIGing: gradient tracking with push-sum over directed time-varying graphs."""

from __future__ import annotations

from typing import Any

import numpy as np

from .base import MethodState, mix

__all__ = ["PushDIGing", "mix"]


class PushDIGing:
    """Push-DIGing (Nedic, Olshevsky and Shi, SIAM J. Optim. 27(4), 2017, Algorithm 2).

    With the column-stochastic ``C^k`` of the schedule (the same push weights as SGP), step
    size ``a`` and the stochastic gradients ``g`` at the de-biased points ``z = u / v``::

        u^{k+1} = C^k (u^k - a y^k),   v^{k+1} = C^k v^k,   z^{k+1} = u^{k+1} / v^{k+1},
        y^{k+1} = C^k y^k + g(z^{k+1}) - g(z^k),            y^0 = g(z^0),

    one gradient draw per node and step (the one at ``z^{k+1}`` is also the one subtracted at
    the next step). The tracking variable ``y`` carries the invariant
    ``sum_i y_i^k = sum_i g_i(z_i^k)`` (messages in flight included): column sums of one keep
    it exactly, so ``y`` tracks the average gradient and, with exact gradients and a constant
    step, the iterates reach a stationary point where SGP stalls at a floor set by the
    heterogeneity zeta^2.

    Delays: ``u``, ``v`` and ``y`` travel in the same messages, with the same delays (the
    delay-augmented matrices), and the invariant counts ``y`` in flight. A lost message
    (:func:`sgpverify.graphs.with_message_loss`) loses its shares of ``u``, ``v`` and ``y``:
    the lost ``y`` breaks the invariant for good (``sum_i y_i`` then differs from
    ``sum_i g_i`` by the lost tracking mass, which ``Trace.tracking_error`` shows) and the
    method then tracks a biased average gradient; nothing repairs it, as in the paper, whose
    analysis assumes no loss. Stragglers only change the schedule's matrices.
    """

    name = "push-diging"
    weights = "push"
    fused = None  # no fused step: the engine runs it through the generic loop

    def start(self, n: int, X0: np.ndarray, grad: Any) -> MethodState:
        N, R, _ = X0.shape
        G0 = np.asarray(grad(X0[:n]), dtype=float)
        v = np.zeros((N, R))
        v[:n] = 1.0
        y = np.zeros_like(X0)
        y[:n] = G0
        return MethodState(
            n=n,
            vectors={"x": X0.copy(), "y": y},
            scalars={"w": v},
            grads=np.array(G0, copy=True),
            applied=np.zeros(X0.shape[1:]),
        )

    def points(self, state: MethodState, n: int) -> np.ndarray:
        return state.vectors["x"][:n] * (1.0 / state.scalars["w"][:n])[:, :, None]

    def step(self, k: int, P: Any, state: MethodState, gamma: float, grad: Any) -> None:
        u, y, v = state.vectors["x"], state.vectors["y"], state.scalars["w"]
        n = state.n
        state.applied += y.sum(axis=0)  # u's node sum falls by gamma * (sum of y, in flight included)
        u_new = mix(P, u - gamma * y)
        v_new = mix(P, v)
        z = u_new[:n] * (1.0 / v_new[:n])[:, :, None]
        g = np.asarray(grad(z), dtype=float)
        y_new = mix(P, y)
        y_new[:n] += g - state.grads
        state.vectors["x"], state.vectors["y"], state.scalars["w"] = u_new, y_new, v_new
        state.grads = g

    def tracking_error(self, state: MethodState) -> np.ndarray:
        diff = state.vectors["y"].sum(axis=0) - state.grads.sum(axis=0)  # (R, d)
        return np.max(np.abs(diff), axis=-1)
