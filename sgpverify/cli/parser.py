"""The parser of the ``sgpverify`` command: one function per subcommand.

Options that several subcommands share are declared once: the schedule
(:func:`add_topology_options`: ``--topology`` with its parameters and faults,
or ``--matrix``) and the problem (:func:`add_problem_options`). Every numeric
option checks its own constraint as it is read (:func:`checked`): a bad value
is one line naming the option, the constraint and the value, exit status 2,
before anything runs.
"""

from __future__ import annotations

import argparse
from collections.abc import Callable

from .. import graphs
from ..problems import PROBLEM_NAMES
from ..validation import check_float, check_int
from ..version import __version__
from .commands import cmd_distributed, cmd_mixing, cmd_run, cmd_simulate, cmd_verify
from .inputs import UsageError

__all__ = ["build_parser", "checked", "add_topology_options", "add_problem_options"]

#: The exit statuses, for every subcommand's help.
EXIT_STATUS = (
    "Exit status: 0 success; 1 a check failed (mixing: an assumption is violated; verify: a check fails or "
    "a control is not detected); 2 bad input, or a simulation that diverged (one line naming the option, "
    "or the iteration); 3 internal error; 4 (verify) no check fails but some are inconclusive."
)


class _Parser(argparse.ArgumentParser):
    def error(self, message):  # one line, no usage dump
        raise UsageError(f"{self.prog}: error: {message}")


def checked(check: Callable[..., object], **bounds: object) -> type[argparse.Action]:
    """An argparse action storing ``check(option, value, **bounds)``: a refused value raises
    :class:`UsageError` naming the option, e.g. ``--drop-prob must be a number in [0.0, 1.0], got nan``.

    ``check`` is one of :mod:`sgpverify.validation`'s (``check_int``, ``check_float``) or
    :func:`check_nodes`; the option's ``type`` converts the text first.
    """

    class Checked(argparse.Action):
        def __call__(self, parser, namespace, values, option_string=None):
            try:
                value = check(option_string or self.dest, values, **bounds)
            except (TypeError, ValueError) as exc:
                raise UsageError(f"{parser.prog}: error: {exc}") from None
            setattr(namespace, self.dest, value)

    return Checked


def check_nodes(name: str, values: list[int]) -> list[int]:
    """A non-empty list of node indices (integers >= 0), for ``--stragglers``."""
    if not values:
        raise ValueError(f"{name} must list at least one node (I,J,...), got none")
    for v in values:
        check_int(name, v, min_value=0)
    return values


def _seed_arg(text):
    if text.strip().lower() in ("random", "none"):
        return None
    try:
        return int(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"expected an integer or 'random', got {text!r}") from None


def _check_seed(name, value):
    return None if value is None else check_int(name, value, min_value=0)


def _int_list(text):
    try:
        return [int(v) for v in text.split(",") if v.strip()]
    except ValueError:
        raise argparse.ArgumentTypeError(f"expected comma-separated integers, got {text!r}") from None


def _check_problem(name, value, user=True):
    if value in PROBLEM_NAMES or (user and ":" in value and all(value.partition(":")[::2])):
        return value
    extra = " or MODULE:ATTR" if user else ""
    raise ValueError(f"{name} must be one of {', '.join(PROBLEM_NAMES)}{extra}, got {value!r}")


def _int(p, option, least, help, **kw):
    kw.setdefault("metavar", option.strip("-")[0].upper())
    p.add_argument(option, type=int, action=checked(check_int, min_value=least), help=help, **kw)


def _float(p, option, help, **bounds_and_kw):
    bounds = {k: bounds_and_kw.pop(k) for k in ("low", "high", "low_open", "high_open") if k in bounds_and_kw}
    bounds_and_kw.setdefault("metavar", option.strip("-")[0].upper())
    p.add_argument(option, type=float, action=checked(check_float, **bounds), help=help, **bounds_and_kw)


def _seed(p, help="seed (default 0)"):
    _int(p, "--seed", 0, help, default=0, metavar="S")


def build_parser() -> argparse.ArgumentParser:
    """The ``sgpverify`` argument parser (errors raise :class:`UsageError`: one line, exit 2)."""
    parser = _Parser(
        prog="sgpverify",
        description="Check Stochastic Gradient Push against its theory, with numbers. " + EXIT_STATUS,
    )
    parser.add_argument("--version", action="version", version=f"sgpverify {__version__}")
    sub = parser.add_subparsers(dest="command", metavar="COMMAND", parser_class=_Parser)
    sub.required = True
    for add in (_add_mixing, _add_simulate, _add_verify, _add_run, _add_distributed):
        add(sub)
    return parser


def add_topology_options(
    p: argparse.ArgumentParser,
    *,
    matrix: bool = False,
    faults: bool = False,
    params: bool = True,
    suite: bool = False,
    default: str | None = None,
) -> None:
    """The schedule options, one declaration for every subcommand.

    ``--topology NAME`` (a family of :data:`sgpverify.graphs.FAMILIES`) with
    ``--nodes``, and with ``params`` the family parameters ``--peers``,
    ``--edge-prob``, ``--rows`` (defaults from the registry, documented
    here); with ``matrix``, ``--matrix FILE`` instead of ``--topology`` (one
    of the two is required); with ``faults``, ``--drop-prob``,
    ``--stragglers``, ``--straggle-every``. ``suite``: the options of
    ``verify``, which override a suite setting (no default of their own;
    ``--nodes`` at least 2, ``--edge-prob`` above 0). ``default``: the
    topology when ``--topology`` is not given (no ``--nodes`` then: the
    subcommand has its own size option).
    """
    names = ", ".join(graphs.TOPOLOGY_NAMES)
    if matrix:
        src = p.add_mutually_exclusive_group(required=True)
        src.add_argument("--topology", choices=graphs.TOPOLOGY_NAMES, metavar="NAME", help="one of: " + names)
        src.add_argument(
            "--matrix",
            action="append",
            metavar="FILE",
            help="a mixing matrix (.npy, .npz sparse, .mtx, or CSV/whitespace text) instead of --topology; repeat "
            "to cycle through several. It must be square, finite, non-negative and column stochastic (columns "
            "summing to 1 within a tolerance of a few eps times the column size): anything else is bad input",
        )
    elif default is not None:
        p.add_argument(
            "--topology",
            choices=graphs.TOPOLOGY_NAMES,
            default=default,
            metavar="NAME",
            help=f"one of: {names} (default {default})",
        )
    else:
        p.add_argument(
            "--topology",
            choices=graphs.TOPOLOGY_NAMES,
            metavar="NAME",
            help=("verify on this schedule instead of the defaults: " if suite else "one of: ") + names,
        )
    if default is None:
        _int(
            p,
            "--nodes",
            2 if suite else 1,
            "nodes n of the main experiments (default 16)"
            if suite
            else "number of nodes (required with --topology; with --matrix, the matrices' size)",
            metavar="N",
        )
    if not params:
        return
    printed = ", at the n of each run" if suite else "; the value used is printed"
    er = graphs.family("erdos-renyi").param("p").constraint.partition("(default: ")[2][:-1]
    rows = graphs.family("torus").param("rows").constraint.partition("(default: ")[2][:-1]
    _int(p, "--peers", 1, "peers per step (exponential families; default 1)", metavar="P")
    _float(
        p,
        "--edge-prob",
        f"edge probability of erdos-renyi, in {'(0, 1]' if suite else '[0, 1]'} (default: {er}{printed})",
        low=0.0,
        high=1.0,
        low_open=suite,
        metavar="P",
    )
    _int(p, "--rows", 1, f"rows of the torus, dividing --nodes (default: {rows}{printed})")
    if not faults:
        return
    _float(
        p,
        "--drop-prob",
        "drop each message with probability P, in [0, 1] (default: none)",
        low=0.0,
        high=1.0,
        metavar="P",
    )
    p.add_argument(
        "--stragglers",
        type=_int_list,
        action=checked(check_nodes),
        metavar="I,J,...",
        help="straggler nodes, in [0, nodes - 1] (send only every --straggle-every steps; default: none)",
    )
    _int(
        p,
        "--straggle-every",
        1,
        "with --stragglers, a straggler sends on steps k with k %% E == 0 (default 2)",
        metavar="E",
    )


def add_problem_options(
    p: argparse.ArgumentParser, *, required: bool = False, user: bool = True, default: str | None = None
) -> None:
    """``--problem`` (a built-in name, and with ``user`` also ``MODULE:ATTR``) and ``--dim``.

    ``required``: both must be given (``simulate``); ``default``: the
    problem and a dimension 10 when not given (``distributed``); neither:
    they override a suite setting (``verify``: default quadratic-cosine, d 10).
    """
    user_help = (
        " or MODULE:ATTR naming a callable ATTR(n=..., d=..., seed=...) returning a Problem-protocol object "
        "(importable from the current directory)"
        if user
        else ""
    )
    dflt = f" (default {default or 'quadratic-cosine'})" if not required else ""
    p.add_argument(
        "--problem",
        required=required,
        default=default,
        action=checked(_check_problem, user=user),
        metavar="NAME|MODULE:ATTR" if user else "NAME",
        help="a built-in problem (" + ", ".join(PROBLEM_NAMES) + ")" + user_help + dflt,
    )
    _int(
        p,
        "--dim",
        1,
        "dimension d" + (" (required)" if required else " (default 10)"),
        required=required,
        default=10 if default is not None else None,
        metavar="D",
    )


def _add_mixing(sub):
    """The ``mixing`` subcommand."""
    m = sub.add_parser(
        "mixing",
        help="measure the mixing assumptions of a topology or matrix schedule",
        description=(
            "Measure column-stochasticity, B-window strong connectivity, diameter, "
            "the contraction constants C and q (and the theory's), push-sum weights "
            "and the period product of a schedule. " + EXIT_STATUS
        ),
    )
    add_topology_options(m, matrix=True, faults=True)
    _int(m, "--tau", 0, "maximum message delay (default 0)", default=0)
    m.add_argument("--delay", choices=("fixed", "random"), help="delay model, with --tau >= 1 (default fixed)")
    _int(m, "--horizon", 1, "steps examined (default 100)", default=100, metavar="K")
    _seed(m)
    m.add_argument(
        "--weights",
        choices=("push", "metropolis"),
        help="weights for a topology (default push: 1/(out-degree+1))",
    )
    _int(
        m,
        "--envelope-horizon",
        1,
        "largest product length for the envelope (C, q), at least --horizon (default: until round-off, "
        "at most max(10 x horizon, 1000))",
        metavar="T",
    )
    _int(
        m,
        "--columns",
        1,
        "product columns tracked for C and q (default: all up to 512 rows, else 256 seeded "
        "random ones, fewer above 131072 rows so that they fit in 256 MB)",
    )
    _int(
        m,
        "--lyapunov-steps",
        4,
        "steps of the Lyapunov rate estimate, at least 4, and for a periodic schedule at least about 2.2 "
        "periods (a tenth is burn-in, then 2 segments of whole periods; the error names the least) (default 2000)",
        default=2000,
        metavar="S",
    )
    m.add_argument(
        "--json",
        action="store_true",
        help="print one JSON object (q_exact, q_lyapunov, the envelope C, q and the fitted C_fit, q_fit, ...)",
    )
    m.set_defaults(func=cmd_mixing)


def _add_simulate(sub):
    """The ``simulate`` subcommand."""
    from ..engine.methods import METHODS

    s = sub.add_parser(
        "simulate",
        help="run SGP, tau-OSGP or a baseline on a test problem and report the metrics",
        description=(
            "Simulate SGP (Algorithm 1), tau-OSGP or a baseline on a built-in or user problem, on a topology or "
            "matrix schedule; print final consensus, ||grad f(xbar)||^2, f(xbar), mass and weight errors. "
            + EXIT_STATUS
        ),
    )
    add_problem_options(s, required=True)
    add_topology_options(s, matrix=True, faults=True)
    _int(s, "--iters", 0, "iterations K (required)", required=True, metavar="K")
    _float(s, "--step-size", "step size gamma > 0 (required)", required=True, low=0.0, low_open=True, metavar="G")
    _int(s, "--tau", 0, "maximum message delay: tau-OSGP when >= 1 (algorithm sgp; default 0)", default=0)
    s.add_argument("--delay", choices=("fixed", "random"), help="delay model, with --tau >= 1 (default fixed)")
    s.add_argument(
        "--algorithm",
        choices=tuple(METHODS),
        default="sgp",
        help="one of: %(choices)s (default sgp; push-diging: gradient tracking)",
    )
    _int(s, "--average-every", 1, "local-sgd averaging period H (default 10)", metavar="H")
    _float(
        s,
        "--momentum",
        "local momentum in [0, 1) (default 0)",
        default=0.0,
        low=0.0,
        high=1.0,
        high_open=True,
        metavar="M",
    )
    s.add_argument("--nesterov", action="store_true", help="Nesterov momentum (with --momentum > 0)")
    s.add_argument("--send-before-step", action="store_true", help="the authors' overlap variant (algorithm sgp)")
    _int(s, "--replicas", 1, "independent runs in one vectorised pass (default 1)", default=1)
    s.add_argument(
        "--seed",
        type=_seed_arg,
        default=0,
        action=checked(_check_seed),
        metavar="S",
        help="seed, an integer >= 0 (default 0); 'random': fresh entropy, printed so that the run can be repeated",
    )
    _float(
        s,
        "--message-loss",
        "lose each message in flight with probability P, in [0, 1] (mass is not conserved; default: none)",
        low=0.0,
        high=1.0,
        metavar="P",
    )
    _int(
        s, "--record-every", 1, "record the metrics every E iterations (default: iters // 100, at least 1)", metavar="E"
    )
    s.add_argument("--json", action="store_true", help="print one JSON object with final values and series")
    s.add_argument("--no-progress", action="store_true", help="no progress bar on stderr")
    s.set_defaults(func=cmd_simulate)


def _add_verify(sub):
    """The ``verify`` subcommand."""
    from ..method_claims import METHOD_CLAIMS
    from ..suite import CHECK_NAMES

    v = sub.add_parser(
        "verify",
        help="run the verification suite: does SGP behave as its theory says? (the main job)",
        description=(
            "Run the verification experiments (on built-in defaults, or on your schedule, delays and problem), "
            "print a table (check, measured, predicted, verdict), write DIR/report.md with figures, raw data "
            "and a manifest. " + EXIT_STATUS
        ),
    )
    v.add_argument("--quick", action="store_true", help="the quick preset (about two minutes on 2 cores)")
    v.add_argument(
        "--controls",
        action="store_true",
        help="also run every check on its negative control and report whether it is detected",
    )
    v.add_argument(
        "--settle",
        action="store_true",
        help="after the planned run, give every inconclusive check (and every control not detected) the "
        "evidence it lacks -- a ladder from its regime, a longer ladder, more replicas -- in rounds with error "
        "control, within --budget; the table shows each verdict before and after",
    )
    _float(
        v,
        "--budget",
        "minutes of wall time for --settle (default 20); rounds that would not fit are named with their time",
        low=0.0,
        low_open=True,
        metavar="MINUTES",
    )
    add_topology_options(v, suite=True)
    _int(v, "--tau", 0, "maximum message delay of every SGP run (default 0)")
    v.add_argument("--delay", choices=("fixed", "random"), help="delay model when tau > 0 (default fixed)")
    add_problem_options(v)
    v.add_argument(
        "--config",
        metavar="FILE.toml",
        help="suite settings (any SuiteConfig field) from a TOML file, checked as run checks its [config]",
    )
    v.add_argument(
        "--only",
        action="extend",
        nargs="+",
        metavar="CHECK",
        help="run only these checks (--only A B, or repeated): "
        + ", ".join(CHECK_NAMES)
        + ", or a claim of --claims or --method",
    )
    v.add_argument(
        "--claims",
        action="append",
        metavar="FILE.py",
        help="also check the claims a Python file declares (its CLAIMS, sgpverify.declare; repeatable); they run "
        "beside the built-in checks, through the same tests, controls, settling and report (--only narrows)",
    )
    v.add_argument(
        "--method",
        choices=tuple(METHOD_CLAIMS),
        help="also check the built-in claims of this method (push-diging: exact stationarity with exact "
        "gradients, a stationarity floor free of zeta^2, the consensus rate), declared as --claims files are",
    )
    _int(
        v,
        "--workers",
        1,
        "local processes for the independent experiment units (default: all cores; 1: serial); "
        "the results are the same bits whatever N",
        metavar="N",
    )
    _add_sweep_options(v)
    v.add_argument(
        "--out",
        default="sgpverify-out",
        metavar="DIR",
        help="report directory (default sgpverify-out): sgpverify's own; one that holds other files is refused",
    )
    v.add_argument(
        "--force",
        action="store_true",
        help="write the report into an --out that holds other files (they stay untouched: only sgpverify's "
        "own files, listed in its manifest.json, are replaced)",
    )
    v.add_argument("--json", action="store_true", help='print {"checks": [...], ...} instead of the table')
    _seed(v)
    v.add_argument("--no-progress", action="store_true", help="no progress bar on stderr")
    v.set_defaults(func=cmd_verify)


def _add_run(sub):
    """The ``run`` subcommand."""
    r = sub.add_parser(
        "run",
        help="run experiment configs (TOML, see experiments/) with caching, and write their figures",
        description=(
            "Run each experiment config, split into independent units (configuration x K x ...) on "
            "--workers local processes or a --scheduler dask cluster, with the same bits; finished units "
            "and results are cached by a hash of configuration, seed, code and library versions, so an "
            "interrupted run resumes and a rerun only replots. Every config is checked (its [config] as "
            "verify --config is) before any runs. " + EXIT_STATUS
        ),
    )
    r.add_argument("configs", nargs="+", metavar="CONFIG", help="experiment TOML files")
    r.add_argument("--out", default="docs/figures", metavar="DIR", help="figure directory (default docs/figures)")
    _int(
        r,
        "--workers",
        1,
        "local processes for the independent units (configuration x K x ...; default: all cores; "
        "1: serial); the results are the same bits whatever N",
        metavar="N",
    )
    _add_sweep_options(r)
    r.add_argument("--no-progress", action="store_true", help="no progress bar on stderr")
    r.set_defaults(func=cmd_run)


def _add_distributed(sub):
    """The ``distributed`` subcommand."""
    dp = sub.add_parser(
        "distributed",
        help="real multi-process SGP on torch.distributed (needs the 'distributed' extra)",
        description=(
            "Run SGP, tau-OSGP, D-PSGD or AllReduce SGD with one process per node on localhost "
            "(torch.distributed, gloo). --check also runs the simulator on the same problem, seeds and "
            "schedule; --study stragglers compares wall-clock times under a slow node and slow links; "
            "--study paper runs the paper's experiment in miniature on real data (table and figure in --out). "
            + EXIT_STATUS
        ),
    )
    _int(dp, "--nproc", 1, "processes, one per node (default 4)", default=4, metavar="N")
    _int(dp, "--iters", 0, "iterations per process (default 100)", default=100, metavar="K")
    _int(dp, "--tau", 0, "0: synchronous SGP; >= 1: tau-OSGP (default 0)", default=0)
    dp.add_argument(
        "--delay",
        choices=("asap", "fixed"),
        default="asap",
        help="tau-OSGP: fold a message as soon as it arrives (asap, real asynchrony) or exactly tau steps "
        "after it was sent (fixed: reproducible, --check compares every step with the simulator) (default asap)",
    )
    dp.add_argument(
        "--algorithm",
        choices=("sgp", "osgp", "dpsgd", "allreduce"),
        default=None,
        help="one of: %(choices)s (default: sgp, or osgp when --tau >= 1)",
    )
    add_topology_options(dp, params=False, default="exponential")
    add_problem_options(dp, user=False, default="quadratic-cosine")
    _float(dp, "--step-size", "step size gamma > 0 (default 0.05)", default=0.05, low=0.0, low_open=True, metavar="G")
    _seed(dp)
    _float(
        dp,
        "--timeout",
        "peer timeout in seconds, > 0 (default 60)",
        default=60.0,
        low=0.0,
        low_open=True,
        metavar="SEC",
    )
    dp.add_argument("--check", action="store_true", help="compare with the simulator")
    dp.add_argument(
        "--study",
        choices=("stragglers", "paper"),
        help="run a study instead of a single run: stragglers (wall clock under a slow node and slow links), "
        "paper (the paper's experiment in miniature: a CNN on scikit-learn's digits, AllReduce SGD, SGP, "
        "1-OSGP and D-PSGD, with and without a straggler and a slow link; needs the 'study' extra)",
    )
    _int(dp, "--epochs", 1, "epochs of --study paper (default 12)", default=None, metavar="E")
    dp.add_argument(
        "--out", default="sgpverify-out", metavar="DIR", help="where the study figure goes (default sgpverify-out)"
    )
    dp.add_argument("--json", action="store_true", help="print one JSON object")
    dp.add_argument(
        "--verbose",
        action="store_true",
        help="let the ranks' own log lines (torch, gloo) through to the terminal (default: kept out of the "
        "one-line error)",
    )
    dp.set_defaults(func=cmd_distributed)


def _add_sweep_options(p):
    p.add_argument(
        "--scheduler",
        metavar="ADDRESS",
        help="run the units on the dask.distributed cluster of this scheduler (e.g. tcp://HOST:8786; "
        "needs pip install 'sgpverify[cluster]'); same bits as --workers 1 when every worker has this "
        "machine's numeric fingerprint (CPU and BLAS/LAPACK build). Workers with other sgpverify code or "
        "library versions are refused; workers on another numeric platform are used with a one-line "
        "warning (results may differ in the last bits), their units are not cached, and verify's "
        "manifest.json lists them",
    )
    p.add_argument(
        "--cache",
        default=".sgpverify-cache",
        metavar="DIR",
        help="cache of finished units (and, for run, of whole results): a rerun resumes where an "
        "interrupted one stopped (default .sgpverify-cache; delete it to clear)",
    )
    p.add_argument("--no-cache", action="store_true", help="neither read nor write the cache")
