"""The ``sgpverify`` command.

User mistakes (bad arguments, invalid matrices) print one line naming the
parameter and the value and exit with status 2, without a traceback.

Exit status: 0 success; 1 a check failed (a mixing assumption is violated, or
a verification check, or a negative control was not detected); 2 bad input;
3 internal error (a bug: traceback shown; or, in one line, a worker process
that died while running a unit of verify/run: rerun to resume from the cache);
4 (verify) no check failed but some are inconclusive.
"""

from __future__ import annotations

import argparse
import json
import sys
from pathlib import Path

import numpy as np

from . import __version__, engine, graphs
from ._json import jsonable
from .errors import SGPVerifyError, WorkerDiedError
from .problems import PROBLEM_NAMES

__all__ = ["main", "build_parser"]


class UsageError(Exception):
    """Raised for user mistakes; printed in one line, exit status 2."""


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


def build_parser():
    parser = _Parser(
        prog="sgpverify",
        description="Check Stochastic Gradient Push against its theory, with numbers.",
    )
    parser.add_argument("--version", action="version", version=f"sgpverify {__version__}")
    sub = parser.add_subparsers(dest="command", metavar="COMMAND", parser_class=_Parser)
    sub.required = True

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
    m.set_defaults(func=_cmd_mixing)

    from .engine import ALGORITHMS

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
    s.set_defaults(func=_cmd_simulate)

    from .suite import CHECK_NAMES, SUITE_TOPOLOGIES

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
    _sweep_options(v)
    v.add_argument("--out", default="sgpverify-out", metavar="DIR", help="report directory (default sgpverify-out)")
    v.add_argument("--json", action="store_true", help='print {"checks": [...], ...} instead of the table')
    v.add_argument("--seed", type=int, default=0, metavar="S")
    v.add_argument("--no-progress", action="store_true", help="no progress bar on stderr")
    v.set_defaults(func=_cmd_verify)

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
    _sweep_options(r)
    r.add_argument("--no-progress", action="store_true", help="no progress bar on stderr")
    r.set_defaults(func=_cmd_run)

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
    dp.set_defaults(func=_cmd_distributed)
    return parser


def _sweep_options(p):
    p.add_argument(
        "--scheduler",
        metavar="ADDRESS",
        help="run the units on the dask.distributed cluster of this scheduler (e.g. tcp://HOST:8786; "
        "needs pip install 'sgpverify[cluster]'); same bits as --workers 1",
    )
    p.add_argument(
        "--cache",
        default=".sgpverify-cache",
        metavar="DIR",
        help="cache of finished units (and, for run, of whole results): a rerun resumes where an "
        "interrupted one stopped (default .sgpverify-cache; delete it to clear)",
    )
    p.add_argument("--no-cache", action="store_true", help="neither read nor write the cache")


def _executor_args(a, cmd):
    """workers and scheduler of verify/run, checked: --workers defaults to all cores, unless --scheduler."""
    from ._validate import check_int

    if a.scheduler is not None:
        if a.workers is not None:
            raise UsageError(
                f"sgpverify {cmd}: error: --workers and --scheduler are exclusive (the cluster has its "
                f"own workers), got --workers {a.workers} and --scheduler {a.scheduler!r}"
            )
        a.workers = 1
    elif a.workers is None:
        import os

        a.workers = max(1, os.cpu_count() or 1)
    try:
        check_int("--workers", a.workers, min_value=1)
    except ValueError as exc:
        raise UsageError(f"sgpverify {cmd}: error: {exc}") from None
    return None if a.no_cache else a.cache


class _UnitProgress:
    """Counts finished units (and those loaded from the cache), with an optional bar on stderr."""

    def __init__(self, a, err, total, desc):
        self.total, self.cached, self.bar = total, 0, None
        if not a.no_progress:
            from tqdm import tqdm

            self.bar = tqdm(
                total=total,
                desc=desc,
                unit="unit",
                file=err,
                mininterval=0.5,
                bar_format="{desc}: {n_fmt}/{total_fmt} units, {elapsed} {postfix}",
            )

    def __call__(self, msg):
        self.cached += msg.endswith(": cached")
        if self.bar is not None:
            self.bar.set_postfix_str(msg, refresh=False)
            self.bar.update(1)

    def close(self):
        if self.bar is not None:
            self.bar.close()

    def note(self, cache):
        return f", {self.cached} of {self.total} units from the cache {cache}" if self.cached else ""


def _connect(a):
    """A dask client for --scheduler (checked before anything runs), or None."""
    if a.scheduler is None:
        return None, False
    from .sweep import connect

    return connect(a.scheduler, sname="--scheduler")


def load_matrix(path):
    """Load a matrix from .npy, .npz (scipy sparse), .mtx or text (CSV or whitespace)."""
    p = Path(path)
    if not p.is_file():
        raise UsageError(f"sgpverify mixing: error: --matrix must name an existing file, got {str(path)!r}")
    try:
        if p.suffix == ".npy":
            return np.load(p, allow_pickle=False)
        if p.suffix == ".npz":
            import scipy.sparse as sp

            return sp.load_npz(p)
        if p.suffix == ".mtx":
            import scipy.io

            return scipy.io.mmread(p)
        text = p.read_text()
        if not text.strip():
            raise UsageError(
                f"sgpverify mixing: error: --matrix file {str(path)!r} must hold a matrix, got an empty file"
            )
        delim = "," if "," in text else None
        import warnings

        with warnings.catch_warnings():
            warnings.simplefilter("error")  # numpy's "input contained no data" is an error here
            return np.atleast_2d(np.loadtxt(p, delimiter=delim, ndmin=2))
    except UsageError:
        raise
    except Exception as exc:  # unreadable file: a user mistake
        raise UsageError(f"sgpverify mixing: error: --matrix file {str(path)!r} could not be read: {exc}") from None


def _topology_from_args(a):
    if a.nodes is None:
        raise UsageError("sgpverify mixing: error: --nodes is required with --topology")
    topo = graphs.by_name(a.topology, a.nodes, peers=a.peers, seed=a.seed, p=a.edge_prob, rows=a.rows)
    if a.drop_prob is not None:
        topo = graphs.with_link_failures(topo, a.drop_prob, seed=a.seed)
    if a.stragglers:
        topo = graphs.with_stragglers(topo, a.stragglers, a.straggle_every)
    return topo


def _cmd_mixing(a, out):
    from .assumptions import check_mixing

    if a.topology is not None:
        source = _topology_from_args(a)
    else:
        if a.nodes is not None:
            raise UsageError("sgpverify mixing: error: --nodes applies to --topology, not --matrix")
        from .mixing import check_column_stochastic

        mats = []
        for i, f in enumerate(a.matrix):
            name = "P" if len(a.matrix) == 1 else f"P^({i})"
            try:
                # shape, finiteness and signs are input errors (exit 2); column
                # sums and self-weights are assumptions that the report measures
                mats.append(
                    check_column_stochastic(
                        load_matrix(f), atol=float("inf"), name=name, require_positive_diagonal=False
                    )
                )
            except (ValueError, TypeError) as exc:
                raise UsageError(f"sgpverify mixing: error: {exc} (in {f})") from None
        source = mats if len(mats) > 1 else mats[0]
    report = check_mixing(
        source,
        tau=a.tau,
        delay=a.delay,
        horizon=a.horizon,
        seed=a.seed,
        weights=a.weights,
        envelope_horizon=a.envelope_horizon,
        lyapunov_steps=a.lyapunov_steps,
        columns=a.columns,
    )
    if a.json:
        out.write(json.dumps(report.to_dict()) + "\n")
    else:
        out.write(str(report) + "\n")
    return 0 if report.passed else 1


def _cmd_simulate(a, out, err=None):
    from . import problems
    from ._validate import check_int
    from .engine import simulate

    check_int("nodes", a.nodes, min_value=1)
    check_int("dim", a.dim, min_value=1)
    check_int("iters", a.iters, min_value=0)
    if a.seed is None:  # fresh entropy, recorded in the output so that the run can be repeated
        a.seed = int(np.random.SeedSequence().entropy)
    check_int("seed", a.seed, min_value=0)
    prob = problems.by_name(a.problem, a.nodes, a.dim, seed=a.seed)
    topo = graphs.by_name(a.topology, a.nodes, peers=a.peers, seed=a.seed)
    if a.message_loss is not None:
        topo = graphs.with_message_loss(topo, a.message_loss, seed=a.seed)
    record_every = a.record_every if a.record_every is not None else max(1, a.iters // 100)
    bar = None
    if not a.no_progress and a.iters >= 2000:
        from tqdm import tqdm

        bar = tqdm(total=a.iters, desc="simulate", unit="it", file=err or sys.stderr, mininterval=0.5)
    import warnings

    try:
        with warnings.catch_warnings(record=True) as caught:
            warnings.simplefilter("always", RuntimeWarning)
            trace = simulate(
                prob,
                topo,
                step_size=a.step_size,
                n_iter=a.iters,
                tau=a.tau,
                delay=a.delay,
                algorithm=a.algorithm,
                replicas=a.replicas,
                seed=a.seed,
                record_every=record_every,
                momentum=a.momentum,
                nesterov=a.nesterov,
                send_before_step=a.send_before_step,
                average_every=a.average_every,
                progress=(lambda k: bar.update(1)) if bar else None,
            )
    finally:
        if bar is not None:
            bar.close()
    for w in caught:  # one line each, on stderr
        (err or sys.stderr).write(f"sgpverify simulate: warning: {w.message}\n")
    if a.json:
        d = trace.to_dict()
        d["constants"] = {"L": prob.L, "sigma2": prob.sigma2, "zeta2": prob.zeta2, "f_lower": prob.f_lower}
        d.update(d["final"])
        out.write(json.dumps(jsonable(d)) + "\n")
        return 0
    f = trace.final()
    rows = [
        (
            "problem",
            f"{prob.name} (n={a.nodes}, d={a.dim}; L={prob.L:.4g}, sigma2={prob.sigma2:.4g}, zeta2={prob.zeta2:.4g})",
        ),
        ("topology", trace.topology),
        ("algorithm", a.algorithm + (f", tau={a.tau} ({trace.delay})" if a.tau else "")),
        (
            "iterations, step size",
            f"{a.iters}, {a.step_size:g}" + (f", {a.replicas} replicas" if a.replicas > 1 else ""),
        ),
        ("seed", str(trace.seed)),
        ("consensus", f"{f['consensus']:.6g}   (1/n) sum_i ||z_i - xbar||^2"),
        ("grad_norm_sq", f"{f['grad_norm_sq']:.6g}   ||grad f(xbar)||^2"),
        ("value", f"{f['value']:.6g}   f(xbar)"),
        (
            "mass_error",
            f"{f['mass_error']:.3g}" + (f"   (lost in flight: {f['mass_lost']:.3g})" if a.message_loss else ""),
        ),
        ("weight_error", f"{f['weight_error']:.3g}"),
        ("weights", f"[{f['weight_min']:.4g}, {f['weight_max']:.4g}]"),
        (
            "effective step",
            f"{trace.effective_step_max:.4g}   max step_size / w_min (1/L = "
            f"{1 / prob.L if prob.L else float('inf'):.4g})",
        ),
    ]
    width = max(len(k) for k, _ in rows)
    out.write("\n".join(f"{k.ljust(width)}  {v}" for k, v in rows) + "\n")
    return 0


def _suite_config(a):
    """The SuiteConfig of ``sgpverify verify``: preset, then --config, then options."""
    from ._validate import read_toml
    from .suite import FULL, QUICK, config_from_dict, validate_config

    base = QUICK if a.quick else FULL
    if a.config is not None:
        raw = read_toml(a.config, "--config")
        if "topology" in raw:
            raw["topologies"] = [raw.pop("topology")]
        base = config_from_dict(raw, base, source=a.config)
    over = {}
    if a.topology is not None:
        over["topologies"] = (a.topology,)
    for opt, field in (
        ("nodes", "n"),
        ("peers", "peers"),
        ("edge_prob", "edge_prob"),
        ("rows", "rows"),
        ("tau", "tau"),
        ("delay", "delay"),
        ("problem", "problem"),
        ("dim", "d"),
    ):
        val = getattr(a, opt)
        if val is not None:
            over[field] = val
    if a.edge_prob is not None and not (0.0 < a.edge_prob <= 1.0):
        raise UsageError(f"sgpverify verify: error: --edge-prob must be in (0, 1], got {a.edge_prob}")
    if a.peers is not None and a.peers < 1:
        raise UsageError(f"sgpverify verify: error: --peers must be an integer >= 1, got {a.peers}")
    cfg = config_from_dict(over, base)
    return validate_config(cfg)


def _cmd_verify(a, out, err=None):
    from ._validate import check_int
    from .report import format_table, summary_line, write_report
    from .suite import plan_units, run_suite

    check_int("seed", a.seed, min_value=0)
    cache = _executor_args(a, "verify")
    out_dir = Path(a.out)
    if out_dir.exists() and not out_dir.is_dir():
        raise UsageError(f"sgpverify verify: error: --out must be a directory, got existing file {a.out!r}")
    cfg = _suite_config(a)
    err = err or sys.stderr
    client, owned = _connect(a)
    progress = _UnitProgress(a, err, len(plan_units(cfg, a.controls, a.only)), f"verify ({cfg.name})")
    try:
        result = run_suite(
            cfg,
            seed=a.seed,
            progress=progress,
            controls=a.controls,
            only=a.only,
            workers=a.workers,
            scheduler=client,
            cache=cache,
        )
    finally:
        progress.close()
        if owned:
            client.close()
    report = write_report(result, out_dir)
    if a.json:
        d = result.to_dict()
        d["report"] = str(report)
        out.write(json.dumps(jsonable(d)) + "\n")
    else:
        out.write(format_table(result.checks) + "\n")
        out.write(
            f"\n{summary_line(result)}; report: {report} ({result.seconds:.0f} s, preset {cfg.name}, "
            f"seed {a.seed}{progress.note(cache)})\n"
        )
    return result.status


def _cmd_distributed(a, out, err=None):
    from . import distributed as D

    ok, why = D.available()
    if not ok:
        raise UsageError(f"sgpverify distributed: error: {why}")
    if a.study == "stragglers":
        res = D.straggler_study(
            nproc=a.nproc,
            iters=a.iters,
            topology=a.topology,
            problem=a.problem,
            dim=a.dim,
            step_size=a.step_size,
            seed=a.seed,
            timeout=a.timeout,
        )
        fig = _straggler_figure(res, Path(a.out))
        if a.json:
            out.write(
                json.dumps(
                    jsonable({"rows": res["rows"], "target": res["target"], "setup": res["setup"], "figure": str(fig)})
                )
                + "\n"
            )
        else:
            out.write(f"target ||grad f(xbar)||^2 <= {res['target']:.4g}; setup {res['setup']}\n")
            for r in res["rows"]:
                ttt = "not reached" if r["time_to_target"] is None else f"{r['time_to_target']:.3f} s"
                out.write(
                    f"{r['algorithm']:<10} time to target {ttt:<12} {r['iters_per_second']:7.1f} it/s  "
                    f"final f = {r['final_value']:.6g}\n"
                )
            out.write(f"figure: {fig}\n")
        return 0
    alg = a.algorithm or ("osgp" if a.tau >= 1 else "sgp")
    cfg = D.RunConfig(
        nproc=a.nproc,
        iters=a.iters,
        algorithm=alg,
        tau=a.tau,
        topology=a.topology,
        problem=a.problem,
        dim=a.dim,
        step_size=a.step_size,
        seed=a.seed,
        timeout=a.timeout,
    )
    res = D.launch(cfg)
    d = {
        "algorithm": alg,
        "nproc": a.nproc,
        "iters": a.iters,
        "tau": a.tau,
        "wall_seconds": res.wall_seconds,
        "final_consensus": float(res.consensus()[-1]),
    }
    if a.check:
        d.update(D.check_against_simulator(res))
    if a.json:
        out.write(json.dumps(jsonable(d)) + "\n")
    else:
        width = max(len(k) for k in d)
        out.write("\n".join(f"{k.ljust(width)}  {v}" for k, v in d.items()) + "\n")
    return 0


def _straggler_figure(res, outdir):
    from .plots import pyplot

    plt = pyplot()
    outdir.mkdir(parents=True, exist_ok=True)
    fig, ax = plt.subplots()
    for alg, (t, v) in res["curves"].items():
        ax.plot(t, v, label=alg)
    ax.set(xlabel="wall-clock time (s)", ylabel="f(xbar(t))", title="Slow node and slow links, localhost")
    ax.legend(fontsize=8)
    path = outdir / "stragglers.png"
    fig.tight_layout()
    fig.savefig(path)
    plt.close(fig)
    return path


def _cmd_run(a, out, err=None):
    from .report import plan_configs, run_configs

    cache = _executor_args(a, "run")
    planned = plan_configs(a.configs, cache_dir=cache)
    client, owned = _connect(a)
    progress = _UnitProgress(a, err or sys.stderr, sum(len(p.units) for p in planned), "run")
    try:
        outs = run_configs(
            a.configs,
            out=a.out,
            cache_dir=cache,
            workers=a.workers,
            scheduler=client,
            progress=progress,
            planned=planned,
            option_names=("--workers", "--scheduler"),
        )
    finally:
        progress.close()
        if owned:
            client.close()
    for path, (result, paths, hit) in zip(a.configs, outs):
        state = "cached" if hit else "ran"
        figs = ", ".join(str(p) for p in paths.values()) or "no figures"
        out.write(f"{path}: {state}; {figs}\n")
        for line in _fit_lines(result):
            out.write(f"  {line}\n")
    return 0


def _fit_lines(result):
    """The asymptotic-exponent tests of rate experiments (the suite's statistic), per schedule."""
    from . import rates
    from .suite import RATE_DELTA, RATE_OMEGA

    if not isinstance(result, dict) or "schedules" not in result or "Ks" in result:  # "Ks": speedup
        return []
    lines = []
    for label, sch in result["schedules"].items():
        runs = sch.get("runs", [])
        if not runs or "stationarity" not in runs[0]:
            continue
        x = np.array([r["K"] for r in runs], float)
        if len(x) < 2 or len(runs[0]["stationarity"]) < 2:
            continue
        for key, pred in (("stationarity", -0.5), ("consensus", -1.0)):
            Y = np.array([r[key] for r in runs]).T
            if np.any(Y <= 0):
                continue
            t = rates.test_exponent(x, Y, predicted=pred, delta=RATE_DELTA, omega=RATE_OMEGA)
            lines.append(f"{label} {key} vs K: {t}; local slopes " + ", ".join(f"{v:.3f}" for v in t.local_slopes))
    return lines


def main(argv=None, out=None, err=None):
    """Entry point of the ``sgpverify`` command; returns the exit status."""
    out = sys.stdout if out is None else out
    err = sys.stderr if err is None else err
    parser = build_parser()
    try:
        args = parser.parse_args(argv)
        engine.check_kernels_setting()  # a bad SGPVERIFY_KERNELS is named before any work starts
        if args.func in (_cmd_simulate, _cmd_verify, _cmd_run, _cmd_distributed):
            return args.func(args, out, err)
        return args.func(args, out)
    except UsageError as exc:
        err.write(f"{exc}\n")
        return 2
    except WorkerDiedError as exc:  # not a user mistake, not a bug here: one line, status 3
        err.write(f"sgpverify {args.command}: error: {exc}\n")
        return 3
    except (ValueError, TypeError, SGPVerifyError) as exc:  # includes DistributedError, ClusterError
        cmd = getattr(locals().get("args"), "command", None)
        prefix = f"sgpverify {cmd}" if cmd else "sgpverify"
        err.write(f"{prefix}: error: {exc}\n")
        return 2
    except KeyboardInterrupt:
        err.write("sgpverify: interrupted\n")
        return 130
    except Exception:  # a bug, not a user mistake: show it, with a distinct status
        import traceback

        traceback.print_exc(file=err)
        err.write("sgpverify: internal error (please report it with the command above)\n")
        return 3


if __name__ == "__main__":  # pragma: no cover
    sys.exit(main())
