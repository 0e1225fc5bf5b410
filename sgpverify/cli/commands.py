"""The subcommands of ``sgpverify``: each ``cmd_NAME(args, out, err)`` returns the exit status.

User mistakes raise :class:`UsageError` (one line naming the option and the value, exit 2).
"""

from __future__ import annotations

import contextlib
import json
import os
import shutil
import sys
from pathlib import Path
from typing import TYPE_CHECKING, TextIO

import numpy as np

from ..serialize import jsonable
from ..validation import check_memory
from .inputs import UsageError, defaults_used, load_matrix, problem_from_args, schedule_from_args

if TYPE_CHECKING:
    import argparse

__all__ = [
    "UsageError",
    "cmd_mixing",
    "cmd_simulate",
    "cmd_verify",
    "cmd_run",
    "cmd_distributed",
    "load_matrix",
]


def _executor_args(a, cmd):
    """workers and scheduler of verify/run, checked: --workers defaults to all cores, unless --scheduler."""
    from ..validation import check_int

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
        if msg.startswith("settle round"):  # a settling round begins: what it is for, and the budget used
            if self.bar is not None:
                head, _, rest = msg.partition(": ")
                self.bar.set_description_str(head, refresh=False)
                self.bar.total = None
                self.bar.set_postfix_str(rest, refresh=True)
            return
        if self.bar is not None:
            self.bar.set_postfix_str(msg, refresh=False)
            self.bar.update(1)

    def close(self):
        if self.bar is not None:
            self.bar.close()

    def note(self, cache):
        return f", {self.cached} of {self.total} units from the cache {cache}" if self.cached else ""


@contextlib.contextmanager
def _platform_warnings(cmd, err):
    """Each distinct PlatformMismatchWarning and CacheWarning (a damaged cache entry, recomputed) of the
    block as one stderr line, after it (other warnings as before); none when the block raises (its error
    is the one line)."""
    import warnings

    from ..errors import CacheWarning, PlatformMismatchWarning

    ours = (PlatformMismatchWarning, CacheWarning)
    caught = []
    try:
        with warnings.catch_warnings(record=True) as caught:
            for cls in ours:
                warnings.simplefilter("always", cls)
            yield
    finally:  # shown once the recording has stopped
        for w in caught:
            if not issubclass(w.category, ours):
                warnings.showwarning(w.message, w.category, w.filename, w.lineno)
    mine = [str(w.message) for w in caught if issubclass(w.category, ours)]
    for line in dict.fromkeys(mine):
        err.write(f"sgpverify {cmd}: warning: {line}\n")


def _connect(a):
    """A dask client for --scheduler (checked before anything runs), or None."""
    if a.scheduler is None:
        return None, False
    from ..sweep import connect

    return connect(a.scheduler, sname="--scheduler")


def _delay_arg(a, cmd):
    """``--delay`` applies with ``--tau >= 1`` only (default fixed there)."""
    if a.delay is not None and a.tau == 0:
        raise UsageError(f"sgpverify {cmd}: error: --delay applies with --tau >= 1, got --delay {a.delay} with --tau 0")
    a.delay = a.delay or "fixed"


def _default_lines(notes, width):
    """One line per topology parameter left to its default: the value used and the rule."""
    return [f"{'default ' + opt:<{width}}{v['value']:.6g}   {v['rule']}" for opt, v in notes.items()]


def cmd_mixing(a: argparse.Namespace, out: TextIO, err: TextIO | None = None) -> int:
    """``sgpverify mixing``: measure the mixing assumptions of ``--topology`` or ``--matrix`` (exit 1: one fails)."""
    from ..assumptions import check_mixing

    _delay_arg(a, "mixing")
    if a.envelope_horizon is not None and a.envelope_horizon < a.horizon:
        raise UsageError(
            f"sgpverify mixing: error: --envelope-horizon must be an integer >= --horizon ({a.horizon}), "
            f"got {a.envelope_horizon}"
        )
    source, _ = schedule_from_args(a, "mixing", positive_diagonal=False)
    notes = defaults_used(a)
    try:
        report = check_mixing(
            source,
            tau=a.tau,
            delay=a.delay,
            horizon=a.horizon,
            seed=a.seed,
            weights=a.weights or "push",
            envelope_horizon=a.envelope_horizon,
            lyapunov_steps=a.lyapunov_steps,
            columns=a.columns,
        )
    except ValueError as exc:  # the bound that depends on the schedule, named as the option
        if str(exc).startswith("lyapunov_steps "):
            raise UsageError(
                f"sgpverify mixing: error: --lyapunov-steps {str(exc)[len('lyapunov_steps ') :]}"
            ) from None
        raise
    eq = _equilibrium(source)
    if a.json:
        d = report.to_dict()
        d["defaults"] = {opt: v["value"] for opt, v in notes.items()}
        d["equilibrium"] = eq
        out.write(json.dumps(jsonable(d)) + "\n")
    else:
        lines = str(report).split("\n")
        body = lines[:1] + _default_lines(notes, 24) + lines[1:-1] + _equilibrium_lines(eq) + lines[-1:]
        out.write("\n".join(body) + "\n")
    return 0 if report.passed else 1


#: The largest n whose equilibrium skewness ``sgpverify mixing`` measures (dense eigen- and singular
#: values of an n x n product, a second or two at this n).
EQUILIBRIUM_MAX_N = 1024


def _equilibrium(source) -> dict:
    """The equilibrium skewness kappa_pi and beta_pi of one window of the (undelayed) schedule, with
    whether the directed-graph lower bound's conditions hold there (:mod:`sgpverify.assumptions.skewness`),
    or why they are not measured."""
    from ..assumptions.skewness import window_equilibrium
    from ..graphs import Topology

    if not isinstance(source, Topology):
        return {"measured": False, "why": "a schedule of matrices (--matrix): measure it with window_equilibrium"}
    if source.n > EQUILIBRIUM_MAX_N:
        return {
            "measured": False,
            "why": f"n = {source.n} > {EQUILIBRIUM_MAX_N} (dense algebra): "
            "sgpverify.assumptions.skewness.window_equilibrium",
        }
    try:
        return {"measured": True, **window_equilibrium(source).to_dict()}
    except ValueError as exc:  # a schedule none of whose first windows connects every node
        return {"measured": False, "why": str(exc)}


def _equilibrium_lines(eq: dict) -> list[str]:
    if not eq["measured"]:
        return [f"{'kappa_pi, beta_pi':<24}not measured: {eq['why']}"]
    return [
        f"{'kappa_pi, beta_pi':<24}{eq['kappa_pi']:.6g}, {eq['beta_pi']:.6g} (the product of a window of "
        f"{eq['window']} step{'s' if eq['window'] != 1 else ''})",
        f"{'directed lower bound':<24}"
        + ("its conditions hold" if eq["conditions"] else f"its conditions do not hold: {eq['why']}"),
    ]


def _check_plausible(trace, prob) -> None:
    """Raise SimulationDivergedError where f(xbar) or ||grad f(xbar)||^2 grew by more than 1/eps
    over its start (plus the problem's own scales sigma2 + zeta2 + 1): the start is then lost to
    round-off, a run diverging to finite but absurd values."""
    from ..errors import SimulationDivergedError

    scale = float(prob.sigma2) + float(prob.zeta2) + 1.0
    for label, series in (
        ("f(xbar) - f_lower", np.asarray(trace.value, float) - float(prob.f_lower)),
        ("||grad f(xbar)||^2", np.asarray(trace.grad_norm_sq, float)),
    ):
        s = np.abs(series.reshape(len(trace.iterations), -1)).max(axis=1)
        limit = (s[0] + scale) / np.finfo(float).eps
        bad = np.flatnonzero(s > limit)
        if bad.size:
            k = int(trace.iterations[bad[0]])
            raise SimulationDivergedError(
                f"simulation diverged: {label} = {s[bad[0]]:.3g} at iteration {k}, more than 1/eps = "
                f"{1 / np.finfo(float).eps:.3g} times its start plus the problem's scale ({s[0] + scale:.3g}): "
                f"finite, but past any plausible range (step_size = {trace.step_size:g}; problem L = "
                f"{float(prob.L):.4g}, so a step <= 1/L = {1 / float(prob.L):.4g} is the safe range)"
            )


def cmd_simulate(a: argparse.Namespace, out: TextIO, err: TextIO | None = None) -> int:
    """``sgpverify simulate``: one run of SGP, tau-OSGP or a baseline (exit 2 if it diverges)."""
    from .. import graphs
    from ..engine import simulate

    if a.seed is None:  # fresh entropy, recorded in the output so that the run can be repeated
        a.seed = int(np.random.SeedSequence().entropy)
    _delay_arg(a, "simulate")
    if a.nesterov and a.momentum == 0:
        raise UsageError("sgpverify simulate: error: --nesterov needs --momentum > 0, got --momentum 0")
    record_every = a.record_every if a.record_every is not None else max(1, a.iters // 100)
    if a.nodes is not None and a.dim is not None:  # before the schedule and the problem are built
        from ..engine import memory_estimate

        need = memory_estimate(
            a.nodes, a.dim, replicas=a.replicas, n_iter=a.iters, record_every=record_every, tau=a.tau,
            momentum=a.momentum > 0,
        )  # fmt: skip
        need += 32.0 * a.nodes * a.dim  # a built-in problem's own data: about four copies of the state
        check_memory("simulate", need, f"--nodes {a.nodes}, --dim {a.dim}, --replicas {a.replicas}, --iters {a.iters}")
    source, n = schedule_from_args(a, "simulate", positive_diagonal=True, seed=a.seed)
    if a.message_loss is not None:
        if a.topology is None:
            raise UsageError(
                f"sgpverify simulate: error: --message-loss applies to --topology, not --matrix, "
                f"got --message-loss {a.message_loss}"
            )
        source = graphs.with_message_loss(source, a.message_loss, seed=a.seed)
    prob = problem_from_args(a, n, a.seed)
    notes = defaults_used(a)
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
                source,
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
    trace.check_finite()  # measurements that overflow while the state is still finite: diverged too
    _check_plausible(trace, prob)  # ... and values that grew past any plausible range
    for w in caught:  # one line each, on stderr
        (err or sys.stderr).write(f"sgpverify simulate: warning: {w.message}\n")
    if a.json:
        d = trace.to_dict()
        d["constants"] = {"L": prob.L, "sigma2": prob.sigma2, "zeta2": prob.zeta2, "f_lower": prob.f_lower}
        d["defaults"] = {opt: v["value"] for opt, v in notes.items()}
        d.update(d["final"])
        out.write(json.dumps(jsonable(d)) + "\n")
        return 0
    f = trace.final()
    pname = getattr(prob, "name", type(prob).__name__)
    rows = [
        (
            "problem",
            f"{pname} (n={n}, d={a.dim}; L={prob.L:.4g}, sigma2={prob.sigma2:.4g}, zeta2={prob.zeta2:.4g})",
        ),
        ("topology", trace.topology),
        *[(f"default {opt}", f"{v['value']:.6g}   {v['rule']}") for opt, v in notes.items()],
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
    if trace.tracking_error is not None:  # gradient tracking: the error of sum_i y_i = sum_i g_i
        err_t = float(np.max(trace.tracking_error))
        rows.insert(-2, ("tracking_error", f"{err_t:.3g}   max |sum_i y_i - sum_i g_i| over the records"))
    width = max(len(k) for k, _ in rows)
    out.write("\n".join(f"{k.ljust(width)}  {v}" for k, v in rows) + "\n")
    return 0


def _suite_config(a):
    """The SuiteConfig of ``sgpverify verify``: preset, then --config, then options, checked once by the
    suite's validation (as ``run`` checks its files): an error names the key and the file, or the option."""
    from ..suite import FULL, QUICK, config_from_dict, validate_config
    from ..validation import read_toml

    base = QUICK if a.quick else FULL
    file_keys = set()
    if a.config is not None:
        raw = read_toml(a.config, "--config")
        if "topology" in raw:
            if "topologies" in raw:
                raise UsageError(
                    f"sgpverify verify: error: topology and topologies both set in {a.config}, got topology = "
                    f"{raw['topology']!r} and topologies = {raw['topologies']!r}: keep one"
                )
            raw["topologies"] = [raw.pop("topology")]
        file_keys = set(raw)
        base = config_from_dict(raw, base, source=a.config)
    over, options = {}, {}
    if a.topology is not None:
        over["topologies"], options["topologies"] = (a.topology,), "--topology"
    for dest, field in (
        ("nodes", "n"),
        ("peers", "peers"),
        ("edge_prob", "edge_prob"),
        ("rows", "rows"),
        ("tau", "tau"),
        ("delay", "delay"),
        ("problem", "problem"),
        ("dim", "d"),
    ):
        val = getattr(a, dest)
        if val is not None:
            over[field], options[field] = val, "--" + dest.replace("_", "-")
    cfg = config_from_dict(over, base)
    return validate_config(cfg, source=a.config, keys=file_keys, options=options)


def _check_dirs(a, cmd):
    """--out and --cache, checked before any work: directories this process can create and write;
    verify's --out never the working directory or a parent of it, and refused when it holds files
    sgpverify did not write, unless --force."""
    from ..outdir import check_out_dir, check_writable_dir

    try:
        if cmd == "verify":
            check_out_dir(a.out, force=a.force, option="--out")
        elif getattr(a, "out", None) is not None:
            check_writable_dir(a.out, "--out")
        if getattr(a, "cache", None) is not None and not getattr(a, "no_cache", False):
            check_writable_dir(a.cache, "--cache")
    except ValueError as exc:
        raise UsageError(f"sgpverify {cmd}: error: {exc}") from None


def _table_width(out: TextIO) -> int:
    """The terminal's width where ``out`` is one (80 to 200 columns), else 100: a run whose
    output goes to a file or a pipe prints the same table on every machine."""
    isatty = getattr(out, "isatty", None)
    if isatty is not None and isatty():
        return min(200, max(80, shutil.get_terminal_size((100, 24)).columns))
    return 100


def cmd_verify(a: argparse.Namespace, out: TextIO, err: TextIO | None = None) -> int:
    """``sgpverify verify``: the verification suite (exit 0 pass, 1 fail, 4 inconclusive)."""
    from ..method_claims import paths
    from ..report import format_table, settle_summary, summary_line, write_report
    from ..suite import plan_units, run_suite
    from ..suite.claims import load_files

    cache = _executor_args(a, "verify")
    _check_dirs(a, "verify")
    if a.budget is not None and not a.settle:
        raise UsageError(f"sgpverify verify: error: --budget applies with --settle, got --budget {a.budget:g} alone")
    cfg = _suite_config(a)
    load_files([*paths(a.method), *(a.claims or ())], a.only)  # --method's and --claims files, before any work
    units = plan_units(cfg, a.controls, a.only)
    if getattr(a, "delay", None) is not None and cfg.tau == 0:  # a delay model no planned run would use
        delayed = {k for k, _ in units} & {"delays", "descent", "worstcase"}
        if not delayed:
            raise UsageError(
                f"sgpverify verify: error: --delay applies to delayed runs, got --delay {a.delay} with --tau 0 "
                f"and checks that run none (the delay checks, descent-inequality and worst-case do)"
            )
    err = err or sys.stderr
    client, owned = _connect(a)
    progress = _UnitProgress(a, err, len(units), f"verify ({cfg.name})")
    with _platform_warnings("verify", err):
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
                settle=a.settle,
                budget=a.budget,
            )
        finally:
            progress.close()
            if owned:
                client.close()
    settle = []
    from ..suite.cost import calibrate
    from ..suite.hints import settle_hints
    from ..suite.settle import needs_settling

    if any(needs_settling(c) for c in result.checks):  # what would settle them, with calibrated times
        per_step = (result.settle or {}).get("per_step")
        if per_step is None:
            try:
                per_step = calibrate(cfg, a.seed)
            except Exception:  # a setting whose run fails (diverges) gets its plans without times; never fatal
                per_step = None
        settle = [h.line() for h in settle_hints(result, per_step, workers=a.workers)]
    report = write_report(result, Path(a.out), force=a.force, settle=settle)
    if a.json:
        d = result.to_dict()
        d["report"] = str(report)
        out.write(json.dumps(jsonable(d)) + "\n")
    else:
        before = (
            None
            if result.settle is None
            else {c.name: c.verdict for c in result.checks}
            | {k: v["before"] for k, v in result.settle["checks"].items()}
        )
        out.write(format_table(result.checks, width=_table_width(out), before=before) + "\n")
        if result.settle is not None and result.settle["checks"]:
            out.write("\n" + settle_summary(result.settle) + "\n")
        if settle:
            out.write("\nwhat would settle the rest (also in report.md):\n" + "".join(f"  {s}\n" for s in settle))
        out.write(
            f"\n{summary_line(result)}; report: {report} ({result.seconds:.0f} s, preset {cfg.name}, "
            f"seed {a.seed}{progress.note(cache)})\n"
        )
    return result.status


def cmd_distributed(a: argparse.Namespace, out: TextIO, err: TextIO | None = None) -> int:
    """``sgpverify distributed``: one multi-process run (or a study) on torch.distributed."""
    from .. import distributed as D

    if a.verbose:  # read by the rank launcher (sgpverify.distributed.runner.verbose)
        os.environ["SGPVERIFY_VERBOSE"] = "1"

    if a.study is not None:
        _check_dirs(a, "distributed")
        for dest, opt in (("check", "--check"), ("algorithm", "--algorithm")):
            if getattr(a, dest):
                raise UsageError(
                    f"sgpverify distributed: error: {opt} applies to a single run, not to --study {a.study}"
                )
    if a.study != "paper" and a.epochs is not None:
        raise UsageError("sgpverify distributed: error: --epochs applies to --study paper only")
    ok, why = D.available()
    if not ok:
        raise UsageError(f"sgpverify distributed: error: {why}")
    if a.study == "paper":
        return _paper(a, out)
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
        delay=a.delay,
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


def _paper(a, out):
    """``--study paper``: the miniature of the paper's experiment; table, JSON and figure in --out."""
    from ..distributed import paper

    try:
        import sklearn  # noqa: F401
    except ImportError:
        raise UsageError(
            "sgpverify distributed: error: --study paper needs scikit-learn: pip install 'sgpverify[study]'"
        ) from None
    res = paper.paper_study(
        nproc=a.nproc, epochs=12 if a.epochs is None else a.epochs, seed=a.seed, timeout=max(a.timeout, 120.0)
    )
    outdir = Path(a.out)
    outdir.mkdir(parents=True, exist_ok=True)
    table = paper.paper_table(res)
    (outdir / "paper-table.txt").write_text(table + "\n")
    (outdir / "paper.json").write_text(json.dumps(jsonable(res)) + "\n")
    fig = paper.paper_figure(res, outdir / "paper-accuracy-vs-time.png")
    if a.json:
        out.write(json.dumps(jsonable({"rows": res["rows"], "setup": res["setup"], "figure": str(fig)})) + "\n")
    else:
        out.write(table + "\n")
        out.write(f"paper (ResNet-50, ImageNet): {res['paper']['accuracy_gap']}; {res['paper']['speed']}\n")
        out.write(f"table: {outdir / 'paper-table.txt'}; figure: {fig}\n")
    return 0


def _straggler_figure(res, outdir):
    """``stragglers.png``: ||grad f(xbar(t))||^2 against wall-clock time per algorithm, with the
    target line and each algorithm's time to target marked."""
    from ..plots import pyplot, save

    plt = pyplot()
    outdir.mkdir(parents=True, exist_ok=True)
    fig, ax = plt.subplots(figsize=(8.5, 4.6))
    hits = {r["algorithm"]: r["time_to_target"] for r in res["rows"]}
    for i, (alg, (t, g2)) in enumerate(res["grad_curves"].items()):
        hit = hits.get(alg)
        when = "not reached" if hit is None else f"{hit:.2f} s to target"
        ax.plot(t, g2, color=f"C{i}", label=f"{alg} ({when})")
        if hit is not None:
            ax.axvline(hit, color=f"C{i}", lw=0.8, ls=":")
    ax.axhline(res["target"], color="k", lw=1.0, ls="--", label=f"target {res['target']:.3g}")
    ax.set(
        yscale="log",
        xlabel="wall-clock time (s)",
        ylabel="$\\|\\nabla f(\\bar x(t))\\|^2$",
        title="Slow node and slow links, 4 processes on localhost",
    )
    ax.legend(loc="upper left", bbox_to_anchor=(1.01, 1.0))
    return Path(save(fig, outdir / "stragglers.png"))


def cmd_run(a: argparse.Namespace, out: TextIO, err: TextIO | None = None) -> int:
    """``sgpverify run``: experiment configs (every one checked before any runs), cached, with figures."""
    from ..report import plan_configs, run_configs

    cache = _executor_args(a, "run")
    _check_dirs(a, "run")
    err = err or sys.stderr
    with _platform_warnings("run", err):
        planned = plan_configs(a.configs, cache_dir=cache)
    client, owned = _connect(a)
    progress = _UnitProgress(a, err, sum(len(p.units) for p in planned), "run")
    with _platform_warnings("run", err):
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
    experiments = [p.experiment for p in planned if not p.companion]
    for path, exp, (result, paths, hit) in zip(a.configs, experiments, outs):
        state = "cached" if hit else "ran"
        figs = ", ".join(str(p) for p in paths.values()) or "no figures"
        out.write(f"{path}: {state}; {figs}\n")
        for line in _fit_lines(result):
            out.write(f"  {line}\n")
        if exp == "worstcase":  # the table of docs/tightness.md
            from ..suite.experiments.worstcase import tightness_table

            out.write("".join(f"  {line}\n" for line in tightness_table(result).splitlines()))
    return 0


def _fit_lines(result):
    """The asymptotic-exponent tests of rate experiments (the suite's statistic), per schedule."""
    from .. import rates
    from ..suite import RATE_CORRECTION, RATE_DELTA, RATE_OMEGA

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
            t = rates.test_exponent(
                x, Y, predicted=pred, delta=RATE_DELTA, omega=RATE_OMEGA, correction=RATE_CORRECTION
            )
            lines.append(f"{label} {key} vs K: {t}; local slopes " + ", ".join(f"{v:.3f}" for v in t.local_slopes))
    return lines
