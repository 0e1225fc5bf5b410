"""Methods beside SGP: a small protocol, so that a method is one object the engine runs.

A **method** (:class:`Method`) says what state its nodes carry, how one step moves it with
the step's mixing matrix, and which points its gradients and outputs are taken at. The engine
(:func:`run_method`, reached through ``simulate(..., algorithm=METHOD)``) owns everything
else: the schedule's matrices (delay-augmented when ``tau > 0``: rows ``0..n-1`` the real
nodes, the others messages in flight), the gradient streams (as in SGP: see the Problem protocol
in :mod:`sgpverify.problems`), the records and the :class:`~sgpverify.engine.Trace`. So a user's method runs on every
schedule, delay model, fault and problem of the package, and is measured the same way.

Built in: :class:`PushDIGing` (``algorithm="push-diging"``), gradient tracking over directed
time-varying graphs (Nedic, Olshevsky and Shi, SIAM J. Optim. 2017). SGP, tau-OSGP, D-PSGD,
AllReduce and local SGD keep the engine's own fused step (:mod:`sgpverify.engine.step`).
"""

from __future__ import annotations

from .base import Method, MethodState
from .loop import run_method
from .push_diging import PushDIGing

__all__ = ["Method", "MethodState", "PushDIGing", "run_method", "METHODS", "method_by_name"]

#: The methods known by name (``simulate(..., algorithm=NAME)``).
METHODS = {"push-diging": PushDIGing}


def method_by_name(name: str) -> Method:
    """A built-in method from its name (``"push-diging"``)."""
    if name not in METHODS:
        raise ValueError(f"algorithm must be one of {', '.join(METHODS)} (or a Method object), got {name!r}")
    return METHODS[name]()
