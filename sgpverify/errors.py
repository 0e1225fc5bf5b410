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
]


class SGPVerifyError(Exception):
    """Base class of every error sgpverify raises on purpose."""


class MixingAssumptionError(SGPVerifyError, ValueError):
    """A mixing schedule breaks an assumption of the SGP analysis.

    The message states which assumption and the measured value.
    """


class SimulationDivergedError(SGPVerifyError, ArithmeticError):
    """A simulation produced NaN or infinite values."""


class EffectiveStepWarning(RuntimeWarning):
    """The effective step ``step_size / w_min`` of a run exceeded ``1/L``.

    Push-sum divides by the weights: a node with weight ``w`` takes a step
    ``step_size / w`` on its de-biased parameters, beyond the ``1/L`` range of
    the descent analysis when ``w`` is small.
    """
