"""The parser of the ``sgpverify`` command: one function per subcommand."""

from __future__ import annotations

import argparse

from .. import graphs
from ..problems import PROBLEM_NAMES
from ..version import __version__
from .commands import UsageError, cmd_distributed, cmd_mixing, cmd_run, cmd_simulate, cmd_verify

__all__ = ["build_parser"]


class _Parser(argparse.ArgumentParser):
    def error(self, message):  # one line, no usage dump
        raise UsageError(f"{self.prog}: error: {message}")


def _seed_arg(text):
    if text.strip().lower() in ("random", "none"):
        return None
    try:
        return int(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"expected an integer or 'random', got {text!r}") from None


def _positive_int_list(text):
    try:
        return [int(v) for v in text.split(",") if v.strip()]
    except ValueError:
        raise argparse.ArgumentTypeError(f"expected comma-separated integers, got {text!r}") from None


def build_parser() -> argparse.ArgumentParser:
    """The ``sgpverify`` argument parser (errors raise :class:`UsageError`: one line, exit 2)."""
    parser = _Parser(
        prog="sgpverify",
        description="Check Stochastic Gradient Push against its theory, with numbers.",
    )
    parser.add_argument("--version", action="version", version=f"sgpverify {__version__}")
    sub = parser.add_subparsers(dest="command", metavar="COMMAND", parser_class=_Parser)
    sub.required = True
    for add in (_add_mixing, _add_simulate, _add_verify, _add_run, _add_distributed):
        add(sub)
    return parser


def _add_mixing(sub):
    """The ``mixing`` subcommand."""
    m = sub.add_parser(
        "mixing",
        help="measure the mixing assumptions of a topology or matrix schedule",
        description=(
            "Measure column-stochasticity, B-window strong connectivity, diameter, "
            "the contraction constants C and q (and the theory's), push-sum weights "
            "and the period product of a schedule. Exit 1 if an assumption is violated."
        ),
    )
    src = m.add_mutually_exclusive_group(required=True)
    src.add_argument(
        "--topology", choices=graphs.TOPOLOGY_NAMES, metavar="NAME", help="one of: " + ", ".join(graphs.TOPOLOGY_NAMES)
    )
    src.add_argument(
        "--matrix",
        action="append",
        metavar="FILE",
        help="a mixing matrix (.npy, .npz sparse, .mtx, or CSV/whitespace text); repeat to cycle through several",
    )
    m.add_argument("--nodes", type=int, metavar="N", help="number of nodes (with --topology)")
    m.add_argument("--peers", type=int, default=1, metavar="P", help="peers per step (exponential)")
    m.add_argument("--tau", type=int, default=0, metavar="T", help="maximum message delay (default 0)")
    m.add_argument(
        "--delay", choices=("fixed", "random"), default="fixed", help="delay model when tau > 0 (default fixed)"
    )
    m.add_argument("--horizon", type=int, default=100, metavar="K", help="steps examined (default 100)")
    m.add_argument("--seed", type=int, default=0, metavar="S", help="seed (default 0)")
    m.add_argument(
        "--weights",
        choices=("push", "metropolis"),
        default="push",
        help="weights for a topology (default push: 1/(out-degree+1))",
    )
    m.add_argument("--edge-prob", type=float, metavar="P", help="edge probability (erdos-renyi)")
    m.add_argument("--rows", type=int, metavar="R", help="rows of the torus")
    m.add_argument("--drop-prob", type=float, metavar="P", help="drop each message with probability P")
    m.add_argument(
        "--stragglers",
        type=_positive_int_list,
        metavar="I,J,...",
        help="straggler nodes (send only every --straggle-every steps)",
    )
    m.add_argument(
        "--straggle-every",
        type=int,
        default=2,
        metavar="E",
        help="a straggler sends on steps k with k %% E == 0 (default 2)",
    )
    m.add_argument(
        "--envelope-horizon",
        type=int,
        metavar="T",
        help="largest product length for the envelope (C, q) (default: until round-off, "
        "at most max(10 x horizon, 1000))",
    )
    m.add_argument(
        "--columns",
        type=int,
        metavar="C",
        help="product columns tracked for C and q (default: all up to 512 rows, else 256 seeded "
        "random ones, fewer above 131072 rows so that they fit in 256 MB)",
    )
    m.add_argument(
        "--lyapunov-steps",
        type=int,
        default=2000,
        metavar="S",
        help="steps of the Lyapunov rate estimate (default 2000)",
    )
    m.add_argument(
        "--json",
        action="store_true",
        help="print one JSON object (q_exact, q_lyapunov, the envelope C, q and the fitted C_fit, q_fit, ...)",
    )
    m.set_defaults(func=cmd_mixing)


def _add_simulate(sub):
    """The ``simulate`` subcommand."""
    from ..engine import ALGORITHMS

    s = sub.add_parser(
        "simulate",
        help="run SGP, tau-OSGP or a baseline on a test problem and report the metrics",
        description=(
            "Simulate SGP (Algorithm 1), tau-OSGP or a baseline on a built-in nonconvex "
            "problem; print final consensus, ||grad f(xbar)||^2, f(xbar), mass and weight errors."
        ),
    )
    s.add_argument(
        "--problem", required=True, choices=PROBLEM_NAMES, metavar="NAME", help="one of: " + ", ".join(PROBLEM_NAMES)
    )
    s.add_argument(
        "--topology",
        required=True,
        choices=graphs.TOPOLOGY_NAMES,
        metavar="NAME",
        help="one of: " + ", ".join(graphs.TOPOLOGY_NAMES),
    )
    s.add_argument("--nodes", type=int, required=True, metavar="N")
    s.add_argument("--dim", type=int, required=True, metavar="D")
    s.add_argument("--iters", type=int, required=True, metavar="K")
    s.add_argument("--step-size", type=float, required=True, metavar="G")
    s.add_argument("--peers", type=int, default=1, metavar="P", help="peers per step (exponential)")
    s.add_argument("--tau", type=int, default=0, metavar="T")
    s.add_argument("--delay", choices=("fixed", "random"), default="fixed")
    s.add_argument("--algorithm", choices=ALGORITHMS, default="sgp")
    s.add_argument("--average-every", type=int, metavar="H", help="local-sgd averaging period")
    s.add_argument("--momentum", type=float, default=0.0, metavar="M")
    s.add_argument("--nesterov", action="store_true")
    s.add_argument("--send-before-step", action="store_true", help="the authors' overlap variant")
    s.add_argument("--replicas", type=int, default=1, metavar="R")
    s.add_argument(
        "--seed",
        type=_seed_arg,
        default=0,
        metavar="S",
        help="seed (default 0); 'random': fresh entropy, printed so that the run can be repeated",
    )
    s.add_argument(
        "--message-loss",
        type=float,
        metavar="P",
        help="lose each message in flight with probability P (mass is not conserved)",
    )
    s.add_argument("--record-every", type=int, metavar="E", help="default: iters // 100 (at least 1)")
    s.add_argument("--json", action="store_true", help="print one JSON object with final values and series")
    s.add_argument("--no-progress", action="store_true", help="no progress bar on stderr")
    s.set_defaults(func=cmd_simulate)


def _add_verify(sub):
    """The ``verify`` subcommand."""
    from ..suite import CHECK_NAMES, SUITE_TOPOLOGIES

    v = sub.add_parser(
        "verify",
        help="run the verification suite: does SGP behave as its theory says? (the main job)",
        description=(
            "Run the verification experiments (on built-in defaults, or on your schedule, delays and problem), "
            "print a table (check, measured, predicted, verdict), write DIR/report.md with figures, raw data "
            "and a manifest. Exit 0 every check passes, 1 a check fails (or a control is not detected), "
            "4 none fails but some are inconclusive, 2 bad input, 3 internal error."
        ),
    )
    v.add_argument("--quick", action="store_true", help="the quick preset (about two minutes on 2 cores)")
    v.add_argument(
        "--controls",
        action="store_true",
        help="also run every check on its negative control and report whether it is detected",
    )
    v.add_argument(
        "--topology",
        choices=SUITE_TOPOLOGIES,
        metavar="NAME",
        help="verify on this schedule instead of the defaults: " + ", ".join(SUITE_TOPOLOGIES),
    )
    v.add_argument("--nodes", type=int, metavar="N", help="nodes n of the main experiments (default 16)")
    v.add_argument("--peers", type=int, metavar="P", help="peers per step (exponential schedules)")
    v.add_argument("--edge-prob", type=float, metavar="P", help="edge probability (erdos-renyi)")
    v.add_argument("--rows", type=int, metavar="R", help="rows of the torus")
    v.add_argument("--tau", type=int, metavar="T", help="maximum message delay of every SGP run (default 0)")
    v.add_argument("--delay", choices=("fixed", "random"), help="delay model when tau > 0 (default fixed)")
    v.add_argument(
        "--problem",
        metavar="NAME|MODULE:ATTR",
        help="a built-in problem (" + ", ".join(PROBLEM_NAMES) + ") or MODULE:ATTR naming a callable "
        "ATTR(n=..., d=..., seed=...) returning a Problem-protocol object (importable from the "
        "current directory)",
    )
    v.add_argument("--dim", type=int, metavar="D", help="dimension d (default 10)")
    v.add_argument("--config", metavar="FILE.toml", help="suite settings (any SuiteConfig field) from a TOML file")
    v.add_argument(
        "--only",
        action="append",
        choices=CHECK_NAMES,
        metavar="CHECK",
        help="run only this check (repeatable): " + ", ".join(CHECK_NAMES),
    )
    v.add_argument(
        "--workers",
        type=int,
        default=None,
        metavar="N",
        help="local processes for the independent experiment units (default: all cores; 1: serial); "
        "the results are the same bits whatever N",
    )
    _add_sweep_options(v)
    v.add_argument("--out", default="sgpverify-out", metavar="DIR", help="report directory (default sgpverify-out)")
    v.add_argument("--json", action="store_true", help='print {"checks": [...], ...} instead of the table')
    v.add_argument("--seed", type=int, default=0, metavar="S")
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
            "interrupted run resumes and a rerun only replots."
        ),
    )
    r.add_argument("configs", nargs="+", metavar="CONFIG", help="experiment TOML files")
    r.add_argument("--out", default="docs/figures", metavar="DIR", help="figure directory (default docs/figures)")
    r.add_argument(
        "--workers",
        type=int,
        default=None,
        metavar="N",
        help="local processes for the independent units (configuration x K x ...; default: all cores; "
        "1: serial); the results are the same bits whatever N",
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
            "schedule; --study stragglers compares wall-clock times under a slow node and slow links."
        ),
    )
    dp.add_argument("--nproc", type=int, default=4, metavar="N")
    dp.add_argument("--iters", type=int, default=100, metavar="K")
    dp.add_argument("--tau", type=int, default=0, metavar="T", help="0: synchronous SGP; >= 1: tau-OSGP")
    dp.add_argument(
        "--algorithm",
        choices=("sgp", "osgp", "dpsgd", "allreduce"),
        default=None,
        help="default: sgp, or osgp when --tau >= 1",
    )
    dp.add_argument("--topology", choices=graphs.TOPOLOGY_NAMES, default="exponential", metavar="NAME")
    dp.add_argument("--problem", choices=PROBLEM_NAMES, default="quadratic-cosine", metavar="NAME")
    dp.add_argument("--dim", type=int, default=10, metavar="D")
    dp.add_argument("--step-size", type=float, default=0.05, metavar="G")
    dp.add_argument("--seed", type=int, default=0, metavar="S")
    dp.add_argument("--timeout", type=float, default=60.0, metavar="SEC", help="peer timeout (default 60 s)")
    dp.add_argument("--check", action="store_true", help="compare with the simulator")
    dp.add_argument("--study", choices=("stragglers",), help="run a study instead of a single run")
    dp.add_argument("--out", default="sgpverify-out", metavar="DIR", help="where the study figure goes")
    dp.add_argument("--json", action="store_true")
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
