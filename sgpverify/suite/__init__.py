"""The verification suite behind ``sgpverify verify``.

Each check is one small record, a :class:`Claim`: the paper's statement, the
experiment that measures it, the statistic and the criterion (fixed before any
run, see :data:`CRITERIA`), and the negative control -- the smallest realistic
departure from the theory's assumptions on which the check must fail. The suite
only runs experiments and collects verdicts: ``pass``, ``fail`` or
``inconclusive``. With ``controls=True`` every check is also run on its
control, and the report says whether the control was ``detected`` (the check
failed on it).

Experiments are plain functions of a frozen :class:`SuiteConfig`, a seed and a
:class:`Variant` (the departure of a control, or none); their raw results are
JSON-ready dicts. What is verified -- problem, schedules, delays -- comes from
the configuration, so :func:`verify` answers the question for the user's own
schedule and problem.

The package, one idea a module: :mod:`~sgpverify.suite.config` (the
configuration and its presets), :mod:`~sgpverify.suite.setting` (problem and
schedules resolved, the user's code), :mod:`~sgpverify.suite.departures` (the
controls' departures), :mod:`~sgpverify.suite.records` (claims, checks,
results), :mod:`~sgpverify.suite.runs` (one simulation summarised),
:mod:`~sgpverify.suite.products` (dense product constants),
:mod:`~sgpverify.suite.experiments` (the experiments and their registry),
:mod:`~sgpverify.suite.claims` (the checks beside their records, and their
order) and :mod:`~sgpverify.suite.runner` (planning, executing, evaluating).
"""

from __future__ import annotations

from ..graphs import irregular_exponential
from .claims import BY_NAME, CHECK_NAMES, CLAIMS, CRITERIA
from .claims.bounds import check_combined_bound, check_consensus_bound, check_descent, check_theorem1
from .claims.comparisons import check_baselines, check_peers, check_scaling, check_topologies
from .claims.conservation import check_mass
from .claims.delays import check_delay_consensus, check_delay_rate, check_delays
from .claims.exponents import check_complexity, check_consensus_rate, check_linear_speedup, check_stationarity_rate
from .claims.schedules import check_mixing_constants
from .claims.worstcase import check_worst_case
from .config import FULL, PRESETS, QUICK, SuiteConfig, config_from_dict, validate_config
from .criteria import EPS, RATE_CORRECTION, RATE_DELTA, RATE_OMEGA, RATIO_CORRECTION, RATIO_OMEGAS
from .departures import NONE, Perturbed, Variant
from .experiments import (
    EXPERIMENT_ORDER,
    EXPERIMENTS,
    MIXING_FAMILIES,
    SCALINGS,
    Experiment,
    Scaled,
    exp_baselines,
    exp_complexity,
    exp_delays,
    exp_descent,
    exp_mixing,
    exp_rates,
    exp_scaling,
    exp_speedup,
    exp_theorem,
    exp_topologies,
    exp_weights,
    exp_worstcase,
    run_experiments,
)
from .products import ENVELOPE_FLOOR, product_constants
from .records import CHECK_VERDICTS, Check, CheckError, Claim, Control, NotApplicable, SuiteResult, exit_status
from .runner import evaluate, make_check, plan_units, run_suite, run_unit, suite_unit, verify
from .setting import (
    SUITE_TOPOLOGIES,
    check_user_problem,
    resolve_problem,
    resolve_topology,
    setting_code,
    upload_files,
)

__all__ = [
    "SuiteConfig",
    "Check",
    "SuiteResult",
    "Claim",
    "Control",
    "Variant",
    "QUICK",
    "FULL",
    "PRESETS",
    "run_suite",
    "verify",
    "CRITERIA",
    "CHECK_NAMES",
    "CLAIMS",
    "RATE_DELTA",
    "RATE_OMEGA",
    "RATE_CORRECTION",
    "RATIO_CORRECTION",
    "exit_status",
    "irregular_exponential",
    "resolve_problem",
    "resolve_topology",
    "BY_NAME",
    "check_combined_bound",
    "check_consensus_bound",
    "check_descent",
    "check_theorem1",
    "check_baselines",
    "check_peers",
    "check_scaling",
    "check_topologies",
    "check_mass",
    "check_delay_consensus",
    "check_delay_rate",
    "check_delays",
    "check_complexity",
    "check_consensus_rate",
    "check_linear_speedup",
    "check_stationarity_rate",
    "check_mixing_constants",
    "check_worst_case",
    "exp_worstcase",
    "CHECK_VERDICTS",
    "config_from_dict",
    "validate_config",
    "EPS",
    "RATIO_OMEGAS",
    "NONE",
    "Perturbed",
    "EXPERIMENT_ORDER",
    "EXPERIMENTS",
    "MIXING_FAMILIES",
    "SCALINGS",
    "Experiment",
    "Scaled",
    "exp_baselines",
    "exp_complexity",
    "exp_delays",
    "exp_descent",
    "exp_mixing",
    "exp_rates",
    "exp_scaling",
    "exp_speedup",
    "exp_theorem",
    "exp_topologies",
    "exp_weights",
    "run_experiments",
    "ENVELOPE_FLOOR",
    "product_constants",
    "NotApplicable",
    "CheckError",
    "evaluate",
    "make_check",
    "plan_units",
    "run_unit",
    "suite_unit",
    "SUITE_TOPOLOGIES",
    "check_user_problem",
    "setting_code",
    "upload_files",
]
