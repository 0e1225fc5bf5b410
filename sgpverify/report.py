"""Reports of the verification suite and cached experiment runs.

:func:`write_report` writes ``DIR/report.md``, the figures (PNG), the raw data
(``data.json``), the checks (``checks.json``) and a manifest (configuration,
seed, versions, numeric platform). Everything is written into a temporary sibling directory and
moved into place at the end, so a failure never leaves a half-written report.

:func:`run_configs` runs experiments described by TOML files (see
``experiments/``), each split into independent units (:data:`SPLITS`) that run
on any executor (:mod:`sgpverify.sweep`) with the same bits, caching each unit
and each merged result by a hash of the configuration, the seed, the sgpverify
version and its source files (:func:`source_hash`), the library versions and
the numeric platform (:func:`sgpverify.sweep.environment`), so that an
interrupted run resumes, a rerun only replots, and no result computed by other
code, or with other rounding, is ever returned.
"""

from __future__ import annotations

import dataclasses
import hashlib
import json
import os
import platform
import shutil
import tempfile
import warnings
from pathlib import Path
from typing import TYPE_CHECKING, Any

from .errors import CacheWarning
from .outdir import check_out_dir, replace_own_files
from .serialize import jsonable
from .suite.records import EXCUSES, control_ok, excuse
from .sweep import platform_fingerprint, read_entry, source_hash, write_entry
from .validation import read_toml, unknown_key
from .version import __version__

if TYPE_CHECKING:
    from collections.abc import Callable, Iterable, Mapping, Sequence

    from distributed import Client

    from .suite import Check, SuiteConfig, SuiteResult

__all__ = [
    "write_report",
    "format_table",
    "manifest",
    "settle_summary",
    "run_config",
    "run_configs",
    "print_tightness",
    "plan_configs",
    "load_config",
    "source_hash",
    "EXPERIMENTS",
    "SPLITS",
]


def _versions():
    import importlib.metadata as md

    out = {"python": platform.python_version(), "sgpverify": __version__}
    for pkg in ("numpy", "scipy", "networkx", "sympy", "matplotlib", "pepit", "cvxpy", "clarabel"):
        try:
            out[pkg] = md.version(pkg)
        except md.PackageNotFoundError:
            out[pkg] = None
    return out


def manifest(
    config: SuiteConfig | Mapping[str, Any],
    seed: int,
    extra: Mapping[str, Any] | None = None,
    foreign: Mapping[str, str] | None = None,
) -> dict[str, Any]:
    """The ``manifest.json`` of a report: what was run, and with what.

    Parameters
    ----------
    config : SuiteConfig or dict
    seed : int
    extra : dict, optional
        More entries (``seconds``).
    foreign : dict, optional
        ``{unit name: fingerprint}`` of the units that dask workers on another
        numeric platform computed (:attr:`SuiteResult.foreign`).

    Returns
    -------
    dict
        ``config``, ``seed``, ``versions``, ``platform``, ``cpus`` and
        ``numeric_platform``: ``fingerprint`` (:func:`platform_fingerprint` of
        this process), ``machine``, ``mixed`` (whether some units were computed
        on another numeric platform) and ``foreign_units`` (those units, each
        with its worker's fingerprint).
    """
    m = {
        "config": config.to_dict() if hasattr(config, "to_dict") else config,
        "seed": seed,
        "versions": _versions(),
        "platform": platform.platform(),
        "cpus": os.cpu_count(),
        "numeric_platform": {
            "fingerprint": platform_fingerprint(),
            "machine": platform.machine(),
            "mixed": bool(foreign),
            "foreign_units": dict(sorted((foreign or {}).items())),
        },
    }
    if extra:
        m.update(extra)
    return m


def format_table(checks: Sequence[Check], width: int = 100, before: Mapping[str, str] | None = None) -> str:
    """Plain-text table of the verdicts, at most ``width`` characters wide.

    Columns: check, verdict, control (its name when detected, ``MISSED name (verdict)``
    when not, ``name (not run)`` for a check that is not applicable) and measured, clipped
    with ``...`` to the width left. The full values, the prediction, the criterion and the
    code of every check are in ``report.md``. With ``before`` (``{check: verdict}`` of the planned run,
    after ``verify --settle``) a column ``before`` shows each verdict before settling. The check,
    verdict and control columns are
    never clipped: the table fits ``width`` when they leave the measured column room for its
    header (at 80 columns they do for every built-in check).

    >>> from sgpverify.suite import Check
    >>> c = Check("mass-conservation", "pass", "mass 1.6e-11, far below tol", "0", "<= tol", "", "x.py:1")
    >>> print(format_table([c], width=60))
    check              verdict  measured
    -----------------  -------  ---------------------------
    mass-conservation  PASS     mass 1.6e-11, far below tol
    >>> print(format_table([c], width=40))
    check              verdict  measured
    -----------------  -------  ------------
    mass-conservation  PASS     mass 1.6e...
    """
    if width < 40:
        raise ValueError(f"width must be at least 40 characters, got {width!r}")
    with_ctl = any(c.control is not None for c in checks)
    head = ("check",) + (("before",) if before else ()) + ("verdict",) + (("control",) if with_ctl else ())
    head += ("measured",)
    rows = [head]
    for c in checks:
        row: tuple[str, ...] = (c.name,) + ((before.get(c.name, c.verdict).upper(),) if before else ())
        row += (c.verdict.upper(),)
        if with_ctl:
            ctl = c.control
            if ctl is None:
                row += ("-",)
            elif c.verdict == "not applicable":
                row += (f"{ctl['name']} (not run)",)
            elif excuse(ctl) is not None:
                row += (f"{ctl['name']} ({EXCUSES[excuse(ctl)][0]})",)
            else:
                row += (ctl["name"] if ctl["detected"] else f"MISSED {ctl['name']} ({ctl['verdict']})",)
        rows.append(row + (c.measured,))
    w = [max(len(r[i]) for r in rows) for i in range(len(head))]
    w[-1] = max(len(head[-1]), min(w[-1], width - sum(w[:-1]) - 2 * (len(w) - 1)))
    lines = []
    for j, r in enumerate(rows):
        lines.append("  ".join(_clip(str(v), w[i]).ljust(w[i]) for i, v in enumerate(r)).rstrip())
        if j == 0:
            lines.append("  ".join("-" * x for x in w))
    return "\n".join(lines)


def _clip(text, width):
    return text if len(text) <= width else text[: width - 3] + "..."


def settle_summary(record: Mapping[str, Any]) -> str:
    """What ``verify --settle`` did, in lines: each settled check's verdict before and after and its
    rounds (what each brought, estimated and actual seconds), then why the rest stayed inconclusive."""
    lines = [
        f"settling: {record['seconds'] / 60:.1f} of {record['budget_minutes']:g} min; rounds on fresh noise, round r "
        "at error rate 0.05 * 2^-r"
    ]
    for name, c in record["checks"].items():
        for r in c["rounds"]:
            over = ", ".join(f"{k} = {v}" for k, v in r["overrides"].items())
            lines.append(
                f"  {name} round {r['round']}: {r['why']} ({over}) -> "
                + (
                    f"{r['verdict'].upper()}"
                    + (f", control {r['control'].upper()}" if r.get("control") else "")
                    + (" (its control, judged before, kept)" if r.get("control_kept") else "")
                    if r["verdict"] is not None
                    else f"control {r['control'].upper()} (the check, decided, not rerun)"
                )
                + f" in {r['seconds']:.0f} s (estimated {r['estimated_seconds']:.0f} s)"
            )
    for name, why in record.get("left", {}).items():
        lines.append(f"  {name}: not settled: {why}")
    return "\n".join(lines)


def summary_line(result: SuiteResult) -> str:
    """One line: the overall verdict and counts."""
    counts = {v: sum(c.verdict == v for c in result.checks) for v in ("pass", "fail", "inconclusive", "not applicable")}
    parts = [f"{counts['pass']} pass", f"{counts['fail']} fail", f"{counts['inconclusive']} inconclusive"]
    if counts["not applicable"]:
        parts.append(f"{counts['not applicable']} not applicable")
    if result.controls:
        missed = [c.name for c in result.checks if not control_ok(c)]
        apart = {k: [c.name for c in result.checks if c.control and excuse(c.control) == k] for k in EXCUSES}
        counted = sum(c.verdict != "not applicable" for c in result.checks) - sum(map(len, apart.values()))
        parts.append(
            f"controls detected {counted - len(missed)}/{counted}"
            + (f" (NOT: {', '.join(missed)})" if missed else "")
            + "".join(f"; {EXCUSES[k][1]}: {', '.join(names)}" for k, names in apart.items() if names)
        )
    status = result.status
    word = {
        0: "all checks pass",
        1: "SOME CHECKS FAIL" if any(c.verdict == "fail" for c in result.checks) else "SOME CONTROLS NOT DETECTED",
        4: "no check fails, some are INCONCLUSIVE",
    }[status]
    return f"{word}: " + ", ".join(parts)


def write_report(
    result: SuiteResult, outdir: str | os.PathLike[str], force: bool = False, settle: list[str] | None = None
) -> Path:
    """Write the full report of a :class:`sgpverify.suite.SuiteResult` into ``outdir``.

    ``outdir`` is sgpverify's: it is refused when it holds files sgpverify did not write (listed
    by the ``"files"`` of its ``manifest.json``), unless ``force``, and never is the working
    directory or a parent of it (:func:`sgpverify.outdir.check_out_dir`). Only the files of
    the previous report are replaced or removed; the user's stay.
    """
    from . import plots

    outdir = check_out_dir(outdir, force=force, option="outdir")
    outdir.parent.mkdir(parents=True, exist_ok=True)
    tmp = Path(tempfile.mkdtemp(prefix=f".{outdir.name}-", dir=outdir.parent))
    try:
        figs = plots.render_all(result.data, tmp)
        (tmp / "data.json").write_text(json.dumps(jsonable(result.data)))
        (tmp / "checks.json").write_text(json.dumps(jsonable(result.to_dict()), indent=1))
        man = jsonable(manifest(result.config, result.seed, {"seconds": result.seconds}, result.foreign))
        cfg = result.config
        lines = [
            "# sgpverify verification report",
            "",
            f"Configuration `{cfg.name}`, seed {result.seed}, sgpverify {__version__}, "
            f"{result.seconds:.0f} s{' (controls included)' if result.controls else ''}. "
            f"Overall: **{summary_line(result)}** (exit status {result.status}).",
            "",
            f"Setting: problem `{cfg.to_dict()['problem']}` (n = {cfg.n}, d = {cfg.d}), schedules "
            + ", ".join(f"`{t}`" for t in cfg.to_dict()["topologies"])
            + f", tau = {cfg.tau}"
            + (f" ({cfg.delay} delays)" if cfg.tau else "")
            + f", x0 = {cfg.x0}.",
            "",
        ]
        if result.foreign:
            lines += [
                f"Mixed numeric platforms: {len(result.foreign)} unit(s) ran on dask workers whose numeric "
                f"fingerprint differs from this machine's ({platform_fingerprint()}): their results may differ "
                f"from a local run's in the last bits (`manifest.json` lists them).",
                "",
            ]
        lines += [
            "| check | measured | predicted | verdict |" + (" control |" if result.controls else "") + " code |",
            "|---|---|---|---|" + ("---|" if result.controls else "") + "---|",
        ]
        for c in result.checks:
            v = c.verdict.upper() if c.verdict == "pass" else f"**{c.verdict.upper()}**"
            ctl = ""
            if result.controls:
                seen = "not applicable" if c.verdict == "not applicable" else None
                if seen is None and excuse(c.control) is not None:
                    seen = EXCUSES[excuse(c.control)][0]
                seen = seen or ("detected" if c.control["detected"] else "**NOT detected**")
                ctl = f" {c.control['name']}: {seen} |"
            lines.append(f"| [{c.name}](#{c.name}) | {c.measured} | {c.predicted} | {v} |{ctl} `{c.code}` |")
        lines += ["", "## Details", ""]
        from .suite import CLAIMS

        claims = {cl.name: cl for cl in CLAIMS}
        for c in result.checks:
            cl = claims[c.name]
            lines += [
                f"### {c.name}",
                "",
                f"- verdict: **{c.verdict}**",
                f"- claim: {cl.statement}",
                f"- statistic: {cl.statistic}",
                f"- measured: {c.measured}",
                f"- predicted: {c.predicted}",
                f"- criterion (fixed in advance): {c.criterion}",
                f"- detail: {c.detail}",
                f"- code: `{c.code}`",
                f"- negative control: {cl.control.name}: {cl.control.description}",
            ]
            if c.control is not None:
                lines.append(
                    f"  - on the control: verdict **{c.control['verdict']}** "
                    f"({'detected' if c.control['detected'] else 'NOT detected'}); measured "
                    f"{c.control['measured']}"
                    + "".join(f"; {EXCUSES[k][0]}: {c.control[k]}" for k in EXCUSES if k in c.control)
                )
            lines.append("")
        if result.settle is not None and result.settle["checks"]:
            lines += ["## Settling", "", "```", settle_summary(result.settle), "```", ""]
        if settle:
            lines += ["## What would settle the rest", ""] + [f"- {s}" for s in settle] + [""]
        lines += ["## Figures", ""]
        for name, path in figs.items():
            lines += [f"### {name}", "", f"![{name}]({Path(path).name})", ""]
        lines += [
            "## Files",
            "",
            "- `data.json`: raw results of every experiment",
            "- `checks.json`: the checks and configuration",
            "- `manifest.json`: configuration, seed, versions, numeric platform, and the files sgpverify "
            "wrote here (the only ones it replaces or removes)",
            "",
        ]
        (tmp / "report.md").write_text("\n".join(lines))
        replace_own_files(tmp, outdir, man)
    finally:
        shutil.rmtree(tmp, ignore_errors=True)
    return outdir / "report.md"


# ---------------------------------------------------------------- experiments from TOML

EXPERIMENTS = ("rates", "speedup", "descent", "delays", "baselines", "mixing", "weights", "constants", "worstcase")
#: Top-level keys of an experiment TOML file.
CONFIG_KEYS = ("experiment", "seed", "figures", "config")


def load_config(path: str | os.PathLike[str]) -> tuple[str, SuiteConfig, int, list[str]]:
    """Read an experiment TOML: ``experiment``, ``seed``, ``figures`` and ``[config]`` overrides.

    The ``[config]`` settings go through the suite's own validation
    (:func:`sgpverify.suite.validate_config`, as ``verify --config``): an
    error names the key, the constraint, the value and the file, before any
    work.
    """
    from .suite import QUICK, config_from_dict, validate_config

    raw = read_toml(path)
    for key in raw:  # a misspelt section or key never runs silently with defaults
        if key not in CONFIG_KEYS:
            raise unknown_key("top-level keys and sections", key, CONFIG_KEYS, path)
    exp = raw.get("experiment")
    if exp not in EXPERIMENTS:
        raise ValueError(f"experiment must be one of {', '.join(EXPERIMENTS)}, got {exp!r} (in {path})")
    over = raw.get("config", {})
    if not isinstance(over, dict):
        raise ValueError(f"config must be a [config] table, got {over!r} (in {path})")
    cfg = validate_config(
        config_from_dict(over, dataclasses.replace(QUICK, name=Path(path).stem), source=path), source=path
    )
    seed = raw.get("seed", 0)
    if isinstance(seed, bool) or not isinstance(seed, int) or seed < 0:
        raise ValueError(f"seed must be an integer >= 0, got {seed!r} (in {path})")
    figures = raw.get("figures", [])
    if not isinstance(figures, list) or not all(isinstance(f, str) for f in figures):
        raise ValueError(f"figures must be a list of figure names, got {figures!r} (in {path})")
    return exp, cfg, seed, figures


def _cache_key(exp, cfg, seed):
    from . import sweep
    from .suite import setting_code

    blob = json.dumps(
        {
            "experiment": exp,
            "config": cfg.to_dict(),
            "seed": seed,
            "version": __version__,
            "source": sweep.source_hash(),
            "environment": sweep.environment(),
            "setting": setting_code(cfg),
        },
        sort_keys=True,
        default=list,
    )
    return hashlib.sha256(blob.encode()).hexdigest()[:16]


#: How an experiment of a TOML config splits into independent units: the SuiteConfig fields
#: (tuples) that a unit restricts to one value, in the experiment's loop order (outermost first).
#: A unit is the experiment function itself on the restricted configuration, with the run's seed
#: (the experiments use the run's seed at every K, n and tau: replicas are paired across them, as in
#: an unsplit run), so the merged result has the bits of the unsplit one (tests/test_sweep.py holds
#: every split against the unsplit function). Experiments not listed run as one unit (delays: its K
#: ladder joins delay_Ks and Ks, and its product constants cover every tau, so it does not split).
SPLITS = {
    "rates": ("topologies", "Ks"),
    "speedup": ("topologies", "speedup_ns", "speedup_Ks"),
    "baselines": ("topologies", "baseline_Ks"),
}
#: Result fields that hold a split field's whole list (restored from the configuration when merging).
_WHOLE = {"speedup": {"Ks": "speedup_Ks", "ns": "speedup_ns"}}


def experiment_unit(exp: str, cfg: SuiteConfig, seed: int) -> dict[str, Any]:
    """The JSON-ready raw result of experiment ``exp`` on ``cfg`` (module-level: runs on any executor)."""
    if exp == "constants":  # rates and constants side by side (docs/constants.md)
        from .assumptions import constants_table

        return jsonable(
            {"n": cfg.n, "horizon": cfg.mixing_horizon, "rows": constants_table(cfg.n, cfg.mixing_horizon, seed)}
        )
    from .suite import EXPERIMENTS as SUITE_EXPERIMENTS

    return jsonable(SUITE_EXPERIMENTS[exp].run(cfg, seed))


def split_config(exp: str, cfg: SuiteConfig) -> list[tuple[str, SuiteConfig]]:
    """``[(label, restricted config)]``: the units of experiment ``exp`` (see :data:`SPLITS`)."""
    import itertools

    fields = SPLITS.get(exp, ())
    labels = cfg.to_dict()["topologies"]
    if len(set(labels)) != len(labels):  # two schedules with one label would merge into one entry
        fields = tuple(f for f in fields if f != "topologies")
    out = []
    for combo in itertools.product(*(range(len(getattr(cfg, f))) for f in fields)):
        over = {f: (getattr(cfg, f)[j],) for f, j in zip(fields, combo)}
        label = ", ".join(
            f"{f}={labels[j] if f == 'topologies' else getattr(cfg, f)[j]}" for f, j in zip(fields, combo)
        )
        out.append((label, dataclasses.replace(cfg, **over)))
    return out


def merge_units(exp: str, cfg: SuiteConfig, parts: Iterable[Mapping[str, Any]]) -> dict[str, Any]:
    """The experiment's result from its units' results (in :func:`split_config` order): lists named
    ``runs`` are concatenated, every other value must agree between the units."""
    parts = [dict(p, **{k: list(getattr(cfg, f)) for k, f in _WHOLE.get(exp, {}).items()}) for p in parts]
    return _merge(parts, exp)


def _merge(parts, where):
    first = parts[0]
    if where.endswith(".runs") and all(isinstance(p, list) for p in parts):
        return [r for p in parts for r in p]
    if isinstance(first, dict) and all(isinstance(p, dict) for p in parts):
        keys = list(dict.fromkeys(k for p in parts for k in p))
        return {k: _merge([p[k] for p in parts if k in p], f"{where}.{k}") for k in keys}
    if any(p != first for p in parts):
        raise RuntimeError(
            f"the units of experiment {where.split('.')[0]} disagree on {where}: it does not "
            f"split into independent units (see sgpverify.report.SPLITS)"
        )
    return first


@dataclasses.dataclass
class PlannedConfig:
    """One experiment config of ``sgpverify run``: what it runs, its cache file and its units.

    A config whose figures draw more from other experiments (:data:`sgpverify.plots.USES`)
    plans those too, on the same settings and seed: ``companion`` names the config they
    serve, and they draw no figure of their own.
    """

    path: Path
    experiment: str
    config: SuiteConfig
    seed: int
    figures: list
    cache_file: Path | None
    hit: bool
    parts: list  # [(label, restricted config)]
    units: list  # [sweep.Unit], empty on a cache hit
    companion: bool = False
    cached: Any = None  # the merged result read from cache_file (a hit), its digest checked


def _read_result(cfile: Path | None) -> Any:
    """The merged result cached in ``cfile`` (its digest checked: a damaged file is warned about
    and recomputed, never used nor fatal), or None."""
    if cfile is None:
        return None
    payload = read_entry(cfile, cfile.name)
    if payload is None:
        return None
    try:
        return json.loads(payload)
    except ValueError:  # whole and matching, yet not JSON: written by other code
        warnings.warn(f"damaged cache entry {cfile} (not JSON): not used, recomputed", CacheWarning, stacklevel=2)
        return None


def plan_configs(
    paths: Iterable[str | os.PathLike[str]], cache_dir: str | os.PathLike[str] | None = ".sgpverify-cache"
) -> list[PlannedConfig]:
    """Read and check every config, look each up in the cache, and list the units still to run.

    ``cache_dir=None``: no cache (nothing read or written).
    """
    from . import plots, suite
    from .sweep import Unit, unit_key

    planned = []
    for path in paths:
        exp, cfg, seed, figures = load_config(path)
        for f in figures:
            if f not in plots.FIGURES:
                raise ValueError(f"figures must be among {', '.join(plots.FIGURES)}, got {f!r} (in {path})")
        uses = sorted({e for f in figures for e in plots.USES.get(f, ()) if e != exp})
        for e in [exp, *uses]:
            stem = Path(path).stem + ("" if e == exp else f"-{e}")
            cfile = None if cache_dir is None else Path(cache_dir) / f"{stem}-{_cache_key(e, cfg, seed)}.json"
            cached = _read_result(cfile)
            hit = cached is not None
            parts = [] if hit else split_config(e, cfg)
            setting = suite.setting_code(cfg) if cache_dir is not None and not hit else None
            units = []
            for label, sub in parts:
                key = None
                if setting is not None:
                    key = unit_key(
                        {"kind": "run", "experiment": e, "config": sub.to_dict(), "setting": setting, "seed": seed}
                    )
                name = f"{Path(path).name}: {e}" + (f" [{label}]" if label else "")
                units.append(Unit(name, experiment_unit, (e, sub, seed), key))
            planned.append(
                PlannedConfig(
                    Path(path), e, cfg, seed, figures if e == exp else [], cfile, hit, parts, units, e != exp, cached
                )
            )
    return planned


def run_configs(
    paths: Iterable[str | os.PathLike[str]],
    out: str | os.PathLike[str] = "docs/figures",
    cache_dir: str | os.PathLike[str] | None = ".sgpverify-cache",
    workers: int = 1,
    scheduler: str | Client | None = None,
    progress: Callable[[str], None] | None = None,
    planned: list[PlannedConfig] | None = None,
    option_names: tuple[str, str] = ("workers", "scheduler"),
) -> list[tuple[dict[str, Any], dict[str, str], bool]]:
    """Run (or load from the cache) experiment configs and write their figures.

    The units of every config (:data:`SPLITS`) run together on ``workers``
    local processes or on the dask cluster at ``scheduler``; each finished unit
    is cached (``cache_dir/units/``), so an interrupted run resumes, and the
    merged result too (``cache_dir/STEM-KEY.json``), so a rerun only replots.
    The results do not depend on the executor. ``cache_dir=None``: no cache.
    Units computed by dask workers on another numeric platform
    (:class:`~sgpverify.errors.PlatformMismatchWarning`) are not cached, nor is
    a merged result that holds one.

    Returns ``[(result_dict, figure_paths, cache_hit)]``, one per config.
    """
    from . import plots
    from .suite import upload_files
    from .sweep import UnitCache, run_units

    planned = plan_configs(paths, cache_dir) if planned is None else planned
    units = [u for p in planned for u in p.units]
    store = UnitCache(cache_dir) if cache_dir is not None else None
    files = sorted({f for p in planned if p.units for f in upload_files(p.config)})
    foreign = {}
    done = run_units(
        units,
        workers=workers,
        scheduler=scheduler,
        cache=store,
        progress=progress,
        files=files,
        option_names=option_names,
        foreign=foreign,
    )
    results = []
    for p in planned:
        if p.hit:
            result = p.cached
        else:
            mine, done = done[: len(p.units)], done[len(p.units) :]
            result = merge_units(p.experiment, p.config, mine)
            # a result with units of another numeric platform is not this platform's: not cached
            if p.cache_file is not None and not any(u.name in foreign for u in p.units):
                write_entry(p.cache_file, p.cache_file.name, json.dumps(result).encode())
        results.append(result)
    # every figure is drawn into a temporary sibling first: a figure that fails leaves none behind
    out = Path(out)
    names = [f for p in planned for f in p.figures]
    # each config's figures draw its own experiment and its companions' (they follow it); it
    # was cached when they all were
    mains = [i for i, p in enumerate(planned) if not p.companion]
    data, hits = [], []
    for i in mains:
        d, hit = {planned[i].experiment: results[i]}, planned[i].hit
        j = i + 1
        while j < len(planned) and planned[j].companion:
            d[planned[j].experiment] = results[j]
            hit = hit and planned[j].hit
            j += 1
        data.append(d)
        hits.append(hit)
    planned, results = [planned[i] for i in mains], [results[i] for i in mains]
    if not names:
        return [(r, {}, hit) for r, hit in zip(results, hits)]
    out.parent.mkdir(parents=True, exist_ok=True)
    tmp = Path(tempfile.mkdtemp(prefix=f".{out.name}-", dir=out.parent))
    try:
        drawn = [{f: plots.render(f, d, tmp / f"{f}.png") for f in p.figures} for d, p in zip(data, planned)]
        out.mkdir(exist_ok=True)
        for f in dict.fromkeys(names):  # two configs drawing one figure: the last one, as before
            os.replace(tmp / f"{f}.png", out / f"{f}.png")
        drawn = [{f: str(out / Path(path).name) for f, path in figs.items()} for figs in drawn]
    finally:
        shutil.rmtree(tmp, ignore_errors=True)
    return [(r, figs, hit) for r, figs, hit in zip(results, drawn, hits)]


def run_config(
    path: str | os.PathLike[str],
    out: str | os.PathLike[str] = "docs/figures",
    cache_dir: str | os.PathLike[str] | None = ".sgpverify-cache",
    progress: Callable[[str], None] | None = None,
    workers: int = 1,
    scheduler: str | Client | None = None,
) -> tuple[dict[str, Any], dict[str, str], bool]:
    """Run (or load from cache) one experiment config and write its figures (see :func:`run_configs`).

    Returns ``(result_dict, figure_paths, cache_hit)``.
    """
    return run_configs([path], out=out, cache_dir=cache_dir, workers=workers, scheduler=scheduler, progress=progress)[0]


def print_tightness(path: str | os.PathLike[str]) -> None:
    """Run (or load from the ``sgpverify run`` cache) the worst-case experiment config ``path`` and
    print its table (docs/tightness.md): ``python -c "from sgpverify.report import print_tightness;
    print_tightness('experiments/tightness.toml')"``."""
    from .suite.experiments.worstcase import tightness_table

    result, _, _ = run_config(path)
    print(tightness_table(result))
