"""The engine's loop for a :class:`~sgpverify.engine.methods.Method`: matrices, gradients, records."""

from __future__ import annotations

from collections.abc import Callable, Sequence
from typing import Any

import numpy as np

from ... import metrics
from ...errors import SimulationDivergedError
from ...mixing import MixingSchedule
from ..trace import Trace
from .base import Method

#: The recorded series: the Trace's, and the error of the method's invariant.
SERIES = Trace.SERIES + ("tracking_error",)


def run_method(
    method: Method,
    problem: Any,
    schedule: MixingSchedule,
    X0: np.ndarray,
    rngs: Sequence[np.random.Generator],
    *,
    gamma: float,
    n_iter: int,
    record_every: int = 1,
    progress: Callable[[int], object] | None = None,
) -> dict[str, Any]:
    """Run ``method`` for ``n_iter`` steps of ``schedule`` from ``X0`` ``(n, R, d)``.

    Returns the final ``x``, ``w``, ``z``, ``y`` (the real nodes' rows; ``y`` the method's
    ``"y"`` vector where it has one), the recorded ``iterations`` and :data:`SERIES`
    (``(T, R)`` each; ``tracking_error`` NaN for a method without an invariant), ``w_low``
    (the smallest weight a gradient was taken with) and ``state_max``.

    Mass bookkeeping as for SGP: ``mass_error`` is ``max |sum of x, in flight included -
    (sum of x^0 - gamma * sum of the applied steps)|`` and ``mass_lost`` the part of it that
    lost messages took (the missing shares of each column of ``P``), so that their difference
    is round-off.
    """
    n, R, d = X0.shape
    N = schedule.N
    Xfull = np.zeros((N, R, d))
    Xfull[:n] = X0

    def grad(Z):
        out = np.empty((n, R, d))
        for r in range(R):
            out[:, r, :] = problem.grad(Z[:, r, :], rngs[r])
        return out

    state = method.start(n, Xfull, grad)
    mass0 = Xfull.sum(axis=0)
    T = n_iter // record_every + (1 if n_iter % record_every else 0) + 1
    ser = {k: np.full((T, R), np.nan) for k in SERIES}
    its = np.zeros(T, dtype=np.int64)
    lost_x, lost_w = np.zeros((R, d)), np.zeros(R)
    w_low, state_max, i = np.inf, 0.0, 0

    def record(k):
        nonlocal i, state_max
        x, w = state.vectors["x"], state.scalars.get("w")
        Z = method.points(state, n)
        if not (np.isfinite(x).all() and np.isfinite(Z).all()):
            bad = int(np.flatnonzero(~np.isfinite(Z).all(axis=(1, 2)))[0]) if not np.isfinite(Z).all() else 0
            exc = SimulationDivergedError(
                f"simulation diverged: node {bad} is not finite at iteration {k} ({method.name}, step_size = {gamma:g})"
            )
            exc.iteration, exc.node = k, bad
            raise exc
        tot = x.sum(axis=0)
        xbar = tot / n
        its[i] = k
        ser["consensus"][i] = metrics.consensus(Z, xbar)
        ser["grad_norm_sq"][i] = np.sum(np.asarray(problem.full_grad(xbar), dtype=float) ** 2, axis=-1)
        ser["value"][i] = problem.value(xbar)
        ser["mass_error"][i] = np.max(np.abs(tot - (mass0 - gamma * state.applied)), axis=-1)
        ser["mass_lost"][i] = np.max(np.abs(lost_x), axis=-1)
        if w is not None:
            ser["weight_error"][i] = np.abs(w.sum(axis=0) - n)
            ser["weight_min"][i] = w[:n].min(axis=0)
            ser["weight_max"][i] = w[:n].max(axis=0)
            ser["weight_lost"][i] = np.abs(lost_w)
        err = method.tracking_error(state)
        if err is not None:
            ser["tracking_error"][i] = err
        state_max = max(state_max, float(np.abs(x[:n]).max()))
        i += 1

    for k in range(n_iter):
        if k % record_every == 0:
            record(k)
        P = schedule.matrix(k)
        missing = 1.0 - np.asarray(P.sum(axis=0)).ravel()  # shares of lost messages, per sender
        lossy = bool(np.any(missing > 0))
        if lossy:  # what the messages carry, before the step (a step may update in place)
            x, w = state.vectors["x"], state.scalars.get("w")
            y = state.vectors.get("y")
            sent = x - gamma * y if y is not None else x.copy()
            if w is not None:
                lost_w += missing @ w
        if "w" in state.scalars:
            w_low = min(w_low, float(state.scalars["w"][:n].min()))
        method.step(k, P, state, gamma, grad)
        carried = state.extra.pop("sent", None)  # the step said what its messages carried
        if lossy:
            lost_x += np.tensordot(missing, sent if carried is None else carried, axes=(0, 0))
        if progress is not None:
            progress(k)
    record(n_iter)
    y = state.vectors.get("y")
    return {
        "x": state.vectors["x"][:n],
        "w": state.scalars["w"][:n] if "w" in state.scalars else np.ones((n, R)),
        "z": method.points(state, n),
        "y": None if y is None else y[:n],
        "iterations": its[:i],
        **{k: v[:i] for k, v in ser.items()},
        "w_low": 1.0 if not np.isfinite(w_low) else w_low,
        "state_max": state_max,
    }
