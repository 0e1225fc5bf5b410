"""The method protocol: the state a method carries, its step, and its points."""

from __future__ import annotations

import dataclasses
from typing import Any, Protocol, runtime_checkable

import numpy as np


@dataclasses.dataclass
class MethodState:
    """What a method's nodes carry, as arrays over the rows of the schedule's matrices.

    ``n`` is the number of real nodes (the first ``n`` rows).
    ``vectors`` maps a name to an ``(N, R, d)`` array (``N = n (tau + 1)``: the real nodes, then
    the messages in flight), ``scalars`` to an ``(N, R)`` array (push-sum weights). The engine
    mixes nothing by itself: the method's :meth:`Method.step` does, with the matrix it is given.
    ``grads`` holds the last stochastic gradients of the real nodes ``(n, R, d)`` (None before the
    first), ``applied``
    the node sum of the steps applied so far ``(R, d)`` (for the mass bookkeeping), ``lost`` is
    unused by the built-in methods and free for a user's.
    """

    n: int
    vectors: dict[str, np.ndarray]
    scalars: dict[str, np.ndarray]
    grads: np.ndarray | None
    applied: np.ndarray
    extra: dict[str, Any] = dataclasses.field(default_factory=dict)


@runtime_checkable
class Method(Protocol):
    """A decentralised method the engine can run (``simulate(..., algorithm=method)``).

    Attributes
    ----------
    name : str
        Its name in the :class:`~sgpverify.engine.Trace` (``Trace.algorithm``).

    Methods
    -------
    start(n, X0, grad) -> MethodState
        The state at iteration 0 from the starting points ``X0`` ``(N, R, d)`` (zero rows for the
        messages in flight); ``grad`` as in ``step``, for a method that needs gradients at the start
        (gradient tracking's ``y^0 = g(z^0)``: that draw comes first in each replica's stream).
    points(state, n) -> ndarray
        The points ``(n, R, d)`` of the real nodes where gradients are taken and outputs read
        (de-biased: ``u / v`` for push-sum methods).
    step(k, P, state, gamma, grad) -> None
        Iteration k in place: ``P`` is the step's ``(N, N)`` column-stochastic CSR matrix (lost
        messages are missing shares), ``grad(Z)`` returns the stochastic gradients ``(n, R, d)``
        at points ``Z`` (one draw per node and replica from the run's streams: call it once per
        step). It must add the step's node sum to ``state.applied`` (``sum_i`` of what it
        subtracted from the vector named ``"x"``, times 1/gamma) for the mass bookkeeping.
    tracking_error(state) -> ndarray or None
        The error of the method's invariant for each replica ``(R,)`` (gradient tracking:
        ``max |sum of y, in flight included - sum_i g_i|``), or None.
    """

    name: str

    def start(self, n: int, X0: np.ndarray, grad: Any) -> MethodState: ...

    def points(self, state: MethodState, n: int) -> np.ndarray: ...

    def step(self, k: int, P: Any, state: MethodState, gamma: float, grad: Any) -> None: ...

    def tracking_error(self, state: MethodState) -> np.ndarray | None: ...
