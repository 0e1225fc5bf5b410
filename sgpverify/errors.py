"""Exceptions raised by sgpverify.

All user-facing errors follow one grammar: they name the parameter, the
constraint and the value, e.g. ``nodes must be an integer >= 1, got 0``.
"""

from __future__ import annotations

__all__ = [
    "SGPVerifyError",
    "MixingAssumptionError",
    "SimulationDivergedError",
    "EffectiveStepWarning",
    "PlatformMismatchWarning",
    "WorkerDiedError",
    "ClusterError",
    "UserCodeError",
    "CacheWarning",
]


class SGPVerifyError(Exception):
    """Base class of every error sgpverify raises on purpose."""


class MixingAssumptionError(SGPVerifyError, ValueError):
    """A mixing schedule breaks an assumption of the SGP analysis.

    The message states which assumption and the measured value.
    """


class SimulationDivergedError(SGPVerifyError, ArithmeticError):
    """A simulation produced NaN or infinite values."""


class UserCodeError(SGPVerifyError):
    """The user's code (a problem's method, a problem factory, a schedule callable) raised, or
    returned what the Problem protocol does not allow.

    ``method`` names the protocol method (``"grad"``, ``"full_grad"``, ``"value"``) where it is
    one, and ``user_traceback`` holds the user's own traceback as text (empty for an output that
    was refused), so that the error crosses process boundaries whole. The command line prints
    both and exits with status 2: a mistake in the user's code, not a bug of sgpverify.
    """

    def __init__(self, message: str, method: str | None = None, user_traceback: str = "") -> None:
        super().__init__(message)
        self.method = method
        self.user_traceback = user_traceback

    def __reduce__(self):
        return (type(self), (str(self), self.method, self.user_traceback))


class WorkerDiedError(SGPVerifyError, RuntimeError):
    """A worker process died while running a unit of a sweep (named in the message and in ``unit``).

    The units that had finished are cached: the same command resumes.
    """

    def __init__(self, message: str, unit: str | None = None) -> None:
        super().__init__(message)
        self.unit = unit


class ClusterError(SGPVerifyError, ValueError):
    """A dask cluster cannot be used: dask missing, no scheduler at the address, no worker,
    or workers that run other code or library versions."""


class CacheWarning(UserWarning):
    """A cache entry was damaged (a flipped byte, a truncation): it was not used, and the unit
    was recomputed and its entry rewritten. The message names the file."""


class PlatformMismatchWarning(UserWarning):
    """A dask worker runs on another numeric platform than this process.

    Same code and library versions, another numeric fingerprint
    (:func:`sgpverify.sweep.platform_fingerprint`: another CPU or BLAS/LAPACK
    build). The worker is used: its results are valid but may differ from a
    local run's in the last bits (the checks compare with tolerances, so a
    verdict near no threshold does not move). The units it computes are not
    cached, and a verify report's ``manifest.json`` lists them.
    """


class EffectiveStepWarning(RuntimeWarning):
    """The effective step ``step_size / w_min`` of a run exceeded ``1/L``.

    Push-sum divides by the weights: a node with weight ``w`` takes a step
    ``step_size / w`` on its de-biased parameters, beyond the ``1/L`` range of
    the descent analysis when ``w`` is small.
    """
