"""The suite's experiments, one row each in :data:`EXPERIMENTS`, in run order.

An experiment is a plain function ``run(cfg, seed, *needed, variant=NONE,
progress=None)`` of a frozen :class:`~sgpverify.suite.SuiteConfig`, a seed and a
:class:`~sgpverify.suite.Variant` (the departure of a control, or none),
returning a JSON-ready dict. Its :class:`Experiment` row says what the suite
needs to know to run it: which other experiments' main data it takes
(``needs``), whether a control reruns it on the control's schedules, where its
run records are (for mass conservation), how a control's data is completed from
the main run's, and what it costs. The suite knows its experiments only
through these rows.
"""

from __future__ import annotations

import dataclasses
from typing import Any, Callable, Iterable

from ...errors import SimulationDivergedError
from ..departures import NONE, Variant
from ..records import NotApplicable
from ..setting import control_schedules
from .bounds import exp_descent, exp_theorem
from .comparisons import SCALINGS, Scaled, complete_topologies_control, exp_baselines, exp_scaling, exp_topologies
from .delays import complete_delays_control, exp_delays
from .ladders import exp_complexity, exp_rates, exp_speedup
from .problem import exp_declared
from .schedules import MIXING_FAMILIES, exp_mixing, exp_weights
from .worstcase import complete_worstcase_control, exp_worstcase

__all__ = [
    "Experiment",
    "EXPERIMENTS",
    "EXPERIMENT_ORDER",
    "run_experiments",
    "run_experiment",
    "needs_of",
    "schedule_runs",
    "exp_mixing",
    "exp_rates",
    "exp_speedup",
    "exp_descent",
    "exp_theorem",
    "exp_delays",
    "exp_baselines",
    "exp_topologies",
    "exp_scaling",
    "exp_complexity",
    "exp_weights",
    "exp_declared",
    "exp_worstcase",
    "MIXING_FAMILIES",
    "SCALINGS",
    "Scaled",
]


@dataclasses.dataclass(frozen=True)
class Experiment:
    """One experiment of the suite and what running it takes.

    Attributes
    ----------
    key : str
        Its name in the data (``data[key]``) and in the claims' ``experiments``.
    run : callable
        ``run(cfg, seed, *needed, variant, progress, **kw) -> dict``.
    cost : (float, float)
        CPU seconds of the quick preset on this project's machine, of the main
        run and of its costliest control (numpy path; ``benchmarks/unit_times.py``).
        Only the order in which units reach the workers depends on it, never a result.
    needs : tuple of str
        Experiments whose main data ``run`` takes, positionally after ``seed``;
        they run first, and an error there makes this experiment's data an error.
    on_schedules : bool
        A control runs it on the control's schedules (``run`` takes ``schedules=``).
    runs : callable, optional
        ``runs(data) -> list`` of the run records in its data (mass conservation
        reads every experiment's), or None if it has none.
    complete_control : callable, optional
        ``complete_control(main, ctl) -> dict``: a control's data completed with
        what it shares with the main run (a reference the departure leaves intact).
    always : bool
        Run even when no chosen claim needs it: the data of a figure (the weights), or what every
        claim consults (the declared constants: a check that uses a refuted one is inconclusive).
    source : str, optional
        The claims file that declares it (:mod:`sgpverify.declare`): a fresh worker process loads
        it before running the unit. None for the built-in experiments.
    digest : str, optional
        SHA-256 of ``source``: part of the unit cache's key, so an edited claims file reruns.
    """

    key: str
    run: Callable[..., dict]
    cost: tuple[float, float] = (1, 1)
    needs: tuple[str, ...] = ()
    on_schedules: bool = False
    runs: Callable[[dict], list] | None = None
    complete_control: Callable[[dict, dict], dict] | None = None
    always: bool = False
    source: str | None = None
    digest: str | None = None

    def __call__(self, *args: Any, **kwargs: Any) -> dict:
        return self.run(*args, **kwargs)


def schedule_runs(data: dict) -> list:
    """The run records of an experiment whose data holds ``schedules: {label: {"runs": [...]}}``."""
    return [r for sch in data["schedules"].values() for r in sch["runs"]]


def _own_runs(data):
    return data["runs"]


def _theorem_runs(data):
    return [e["run"] for e in data["schedules"].values() if e.get("run")]


def _scaling_runs(data):
    return [r for v in data["settings"].values() for r in v["runs"]]


def _rows(*rows: Experiment) -> dict[str, Experiment]:
    return {e.key: e for e in rows}


#: Every experiment, in run order (the order of the keys of the data).
EXPERIMENTS = _rows(
    Experiment("mixing", exp_mixing),
    Experiment("rates", exp_rates, cost=(5, 3), on_schedules=True, runs=schedule_runs),
    Experiment("speedup", exp_speedup, cost=(8, 6), on_schedules=True, runs=schedule_runs),
    Experiment("descent", exp_descent, cost=(1, 1), runs=_own_runs),
    Experiment("theorem", exp_theorem, cost=(4, 5), needs=("mixing",), runs=_theorem_runs),
    Experiment("delays", exp_delays, cost=(13, 11), runs=_own_runs, complete_control=complete_delays_control),
    Experiment("baselines", exp_baselines, cost=(4, 1), on_schedules=True, runs=schedule_runs),
    Experiment(
        "topologies", exp_topologies, cost=(12, 13), runs=schedule_runs, complete_control=complete_topologies_control
    ),
    Experiment("scaling", exp_scaling, cost=(14, 16), runs=_scaling_runs),
    Experiment("complexity", exp_complexity, cost=(3, 4), runs=_own_runs),
    Experiment("weights", exp_weights, always=True),
    Experiment("declared", exp_declared, cost=(1, 1), always=True),
    Experiment("worstcase", exp_worstcase, cost=(6, 0.1), complete_control=complete_worstcase_control),
)
EXPERIMENT_ORDER = tuple(EXPERIMENTS)


def needs_of(keys: Iterable[str]) -> list[str]:
    """The experiments whose main data the experiments ``keys`` take (their ``needs``), in order."""
    return list(dict.fromkeys(need for k in keys for need in EXPERIMENTS[k].needs))


def run_experiments(
    cfg: Any,
    seed: int,
    keys: tuple[str, ...] | list[str],
    variant: Variant = NONE,
    progress: Callable[[str], None] | None = None,
    base: dict | None = None,
) -> dict:
    """Run the experiments ``keys`` in order; returns ``{key: data}``.

    An experiment that diverges or does not apply to the setting gets
    ``{"error": ...}`` (and ``"not_applicable": True``) instead of data: every
    check that needs it is then inconclusive and says why. ``base`` holds the
    main data that experiments with ``needs`` take when it is not among ``keys``.

    Examples
    --------
    >>> from sgpverify import suite
    >>> cfg = suite.config_from_dict({"n": 4, "mixing_horizon": 20, "bound_horizon": 20})
    >>> data = suite.run_experiments(cfg, 0, ("mixing",))
    >>> sorted(data["mixing"])
    ['families', 'schedules']
    """
    data = {}
    sch = None if variant == NONE else control_schedules(cfg, variant)
    for key in keys:
        try:
            run_experiment(cfg, seed, key, variant, progress, base, data, sch)
        except ArithmeticError as exc:
            # a run that blows up (or a solver or a float that overflows on the setting's numbers) is a
            # finding about the setting (step size, weight floor, magnitudes), not a user mistake nor,
            # unless a division by zero, a bug: every check that needs this experiment says why
            if isinstance(exc, ZeroDivisionError):
                raise
            why = str(exc) if isinstance(exc, SimulationDivergedError) else f"{type(exc).__name__}: {exc}"
            data[key] = {"error": why}
            if getattr(exc, "iteration", None) is not None:
                data[key]["iteration"] = int(exc.iteration)
        except NotApplicable as exc:
            data[key] = {"error": str(exc), "not_applicable": True}
            if progress:
                progress(f"{key}: diverged")
    return data


def run_experiment(
    cfg: Any,
    seed: int,
    key: str,
    variant: Variant,
    progress: Callable[[str], None] | None,
    base: dict | None,
    data: dict,
    sch: list | None,
) -> None:
    """Run experiment ``key`` into ``data`` (``sch``: the schedules a control runs on;
    what it ``needs`` comes from ``base``, else from ``data``)."""
    exp = EXPERIMENTS[key]
    needed = []
    for need in exp.needs:
        got = (base or data)[need]
        if "error" in got:
            raise SimulationDivergedError(got["error"])
        needed.append(got)
    kw = {"schedules": sch} if exp.on_schedules else {}
    data[key] = exp.run(cfg, seed, *needed, variant, progress, **kw)
