"""The method protocol: the state a method carries, its step, and its points; :func:`mix` (a
matrix times a state) and :func:`fused_path` (which fused step of the engine computes a method)."""

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
    the node sum of the steps applied so far ``(R, d)`` (for the mass bookkeeping), ``extra``
    free for a method's own arrays. One key of ``extra`` is read by the engine: ``"sent"``, set by
    a step to the ``(N, R, d)`` numerators its messages carried (what it multiplied by ``P``,
    SGP's ``x - gamma g``), so that the shares of lost messages are counted from it; without it
    the engine counts ``x - gamma y`` (``y`` the vector named ``"y"``, where there is one) before
    the step.
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
    weights : {"push", "metropolis"} or None, optional
        The matrices ``step`` is given: a topology's push weights (column stochastic, the
        default when the attribute is absent), its Metropolis weights (doubly stochastic,
        D-PSGD), or None for a method that averages by itself and needs none (the engine then
        passes the identity).
    fused : str or None, optional
        The engine's fused step (:mod:`sgpverify.engine.step`) that computes the same recursion
        as this class's ``start``, ``points`` and ``step``, or None (the default). Where it is
        set and a subclass keeps those three methods, :func:`~sgpverify.engine.simulate` runs that
        step (vectorised, compiled where numba is installed) instead of the generic loop; an
        implementation detail the engine picks (:func:`fused_path`), with the same recursion.

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


def mix(P: Any, A: np.ndarray) -> np.ndarray:
    """``P @ A`` for an ``(N, R, d)`` (or ``(N, R)``) array and an ``(N, N)`` sparse matrix."""
    flat = A.reshape(A.shape[0], -1)
    return np.asarray(P @ flat).reshape(A.shape)


#: The parts of a method that a fused step stands for: a subclass that overrides one of them
#: computes something else, and runs through the generic loop.
FUSED_PARTS = ("start", "points", "step")


def fused_path(method: object) -> str | None:
    """The name of the engine's fused step that computes ``method`` (its ``fused``), or None.

    None where the method declares none, or where its class overrides :data:`FUSED_PARTS` of the
    class that declared it (a variant of a built-in method runs as the user wrote it).

    Examples
    --------
    >>> from sgpverify.engine.methods import SGP, PushDIGing
    >>> fused_path(SGP()), fused_path(PushDIGing())
    ('sgp', None)
    >>> class Doubled(SGP):
    ...     def step(self, k, P, state, gamma, grad):
    ...         super().step(k, P, state, 2 * gamma, grad)
    >>> fused_path(Doubled()) is None
    True
    """
    fused = getattr(method, "fused", None)
    if fused is None:
        return None
    cls = type(method)
    owner = next((c for c in cls.__mro__ if "fused" in vars(c)), None)
    if owner is None or any(getattr(cls, part, None) is not getattr(owner, part, None) for part in FUSED_PARTS):
        return None
    return fused


class BuiltinMethod:
    """The shared parts of the built-in methods with a fused step (SGP, D-PSGD, AllReduce, local
    SGD): ``fused=False`` runs the class's own ``step`` through the generic loop; the step's
    gradients with the mass bookkeeping; no invariant. A subclass sets ``name``, ``weights`` and
    ``fused`` and writes ``start``, ``points`` and ``step``."""

    name: str
    fused: str | None = None

    def __init__(self, *, fused: bool = True) -> None:
        if not fused:
            self.fused = None

    def gradients(self, state: MethodState, grad: Any) -> np.ndarray:
        """The step's stochastic gradients at the nodes' points, added to the mass bookkeeping
        (``state.applied``) and kept in ``state.grads``."""
        g = np.asarray(grad(self.points(state, state.n)), dtype=float)
        state.applied += g.sum(axis=0)
        state.grads = g
        return g

    def tracking_error(self, state: MethodState) -> None:
        return None


class PlainMethod(BuiltinMethod):
    """A built-in method whose nodes carry ``x`` alone (no push-sum weights): D-PSGD, AllReduce and
    local SGD."""

    def start(self, n: int, X0: np.ndarray, grad: Any) -> MethodState:
        return MethodState(n, {"x": X0.copy()}, {}, grads=None, applied=np.zeros(X0.shape[1:]))

    def points(self, state: MethodState, n: int) -> np.ndarray:
        return state.vectors["x"][:n]
