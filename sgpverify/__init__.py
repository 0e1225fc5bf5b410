"""sgpverify: check Stochastic Gradient Push's theory against numbers.

Graph generators for time-varying directed topologies, column-stochastic and
delay-augmented mixing matrices, numerical checks of the mixing assumptions of
Assran, Loizou, Ballas and Rabbat (ICML 2019).
"""

from . import assumptions, engine, graphs, metrics, mixing, problems, rates
from .assumptions import MixingReport, check_mixing
from .engine import Trace, simulate
from .errors import EffectiveStepWarning, MixingAssumptionError, SGPVerifyError, SimulationDivergedError
from .version import __version__

__all__ = [
    "graphs",
    "mixing",
    "assumptions",
    "problems",
    "rates",
    "engine",
    "metrics",
    "simulate",
    "Trace",
    "check_mixing",
    "MixingReport",
    "SGPVerifyError",
    "MixingAssumptionError",
    "SimulationDivergedError",
    "EffectiveStepWarning",
    "verify",
    "__version__",
]


def __getattr__(name):
    # the suite pulls in sympy (theory), plots matplotlib: import them only when asked for
    if name == "verify":
        from .suite import verify

        return verify
    if name in ("suite", "theory", "report", "plots", "pep"):
        import importlib

        return importlib.import_module(f".{name}", __name__)
    raise AttributeError(f"module 'sgpverify' has no attribute {name!r}")
