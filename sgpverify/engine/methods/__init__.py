"""Methods: a small protocol, so that a method is one object the engine runs.

A **method** (:class:`Method`) says what state its nodes carry (:class:`MethodState`), how one
step moves it (its direction, from the stochastic gradients at its points, and its update, with
the step's mixing matrix), and what it records beyond the engine's series (the error of its
invariant, :meth:`Method.tracking_error`). The engine (reached through
``simulate(..., algorithm=METHOD)``) owns everything else: the schedule's matrices
(delay-augmented when ``tau > 0``: rows ``0..n-1`` the real nodes, the others messages in
flight), the gradient streams (see the Problem protocol in :mod:`sgpverify.problems`), the
records and the :class:`~sgpverify.engine.Trace`. So a method runs on every schedule, delay
model, fault and problem of the package, and is measured the same way.

Built in, one file each, all implementations of the same protocol (a name in ``simulate``
is :func:`method_by_name`'s object):

- :class:`SGP` (``"sgp"``): Stochastic Gradient Push; tau-OSGP on a delayed schedule;
- :class:`DPSGD` (``"dpsgd"``): gossip with doubly stochastic Metropolis weights;
- :class:`AllReduce` (``"allreduce"``): exact averaging every step;
- :class:`LocalSGD` (``"local-sgd"``): local steps, exact averaging every H;
- :class:`PushDIGing` (``"push-diging"``): gradient tracking over directed time-varying graphs
  (Nedic, Olshevsky and Shi, SIAM J. Optim. 2017).

How the engine runs a method is its own affair: the generic loop (:func:`run_method`) for any
method, or, for a method whose class names a ``fused`` step of the engine and keeps its
``start``, ``points`` and ``step`` (:func:`fused_path`), that step
(:mod:`sgpverify.engine.step`: vectorised, compiled with numba where installed). The first four
built-ins have one; ``fused=False`` (``SGP(fused=False)``) runs their plain NumPy ``step``
through the generic loop instead, as a user's method runs: the same iterates to round-off.
"""

from __future__ import annotations

from .allreduce import AllReduce
from .base import Method, MethodState, fused_path, mix
from .dpsgd import DPSGD
from .local_sgd import LocalSGD
from .loop import run_method
from .push_diging import PushDIGing
from .sgp import SGP

__all__ = [
    "Method",
    "MethodState",
    "SGP",
    "DPSGD",
    "AllReduce",
    "LocalSGD",
    "PushDIGing",
    "run_method",
    "fused_path",
    "mix",
    "METHODS",
    "method_by_name",
]

#: The built-in methods by name (``simulate(..., algorithm=NAME)``), in the order of the docs.
METHODS: dict[str, type] = {
    "sgp": SGP,
    "dpsgd": DPSGD,
    "allreduce": AllReduce,
    "local-sgd": LocalSGD,
    "push-diging": PushDIGing,
}


def method_by_name(name: str) -> Method:
    """A built-in method from its name, with its defaults (``"sgp"``, ..., ``"push-diging"``).

    Examples
    --------
    >>> method_by_name("local-sgd")
    LocalSGD(average_every=10)
    """
    if name not in METHODS:
        raise ValueError(f"algorithm must be one of {', '.join(METHODS)} (or a Method object), got {name!r}")
    return METHODS[name]()
