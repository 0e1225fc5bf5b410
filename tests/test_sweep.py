"""Sweeps that fan out (sgpverify.sweep): verify and run split into independent units that give
the same bits on any executor (in-process, local processes, a dask LocalCluster), in any order of
completion; a dead worker is named; finished units are cached (atomically) and a rerun resumes.

The dask tests skip without the ``cluster`` extra (``pip install -e ".[cluster]"``)."""

import dataclasses
import json
import os
import subprocess
import sys
import time

import pytest
from _sweep_helpers import die, slow_then  # module-level: the spawned workers import it

from sgpverify import report, suite, sweep
from sgpverify.cli import main
from sgpverify.errors import CacheWarning, ClusterError, WorkerDiedError

#: a setting small enough for seconds; the units are those of the real suite
SMALL = dict(
    Ks=(64, 128, 256),
    rate_replicas=4,
    replicas=4,
    speedup_ns=(4, 8),
    speedup_Ks=(128, 256),
    speedup_replicas=4,
    delay_Ks=(64, 128, 256),
    delay_replicas=4,
    baseline_Ks=(64, 128, 256),
    descent_Ks=(128,),
    theorem_K_cap=300,
    mixing_horizon=40,
    bound_horizon=40,
    n=8,
)
ONLY = ["linear-speedup", "theorem1-bound"]  # units speedup, mixing, theorem, weights and two controls

#: TOML experiment configs of `sgpverify run`, small
RUNS = {
    "r.toml": 'experiment = "rates"\nseed = 2\nfigures = []\n[config]\nn = 8\nKs = [64, 128, 256]\nrate_replicas = 4\n',
    "s.toml": 'experiment = "speedup"\nseed = 1\nfigures = []\n[config]\nspeedup_ns = [4, 8]\n'
    'speedup_Ks = [128, 256]\nspeedup_replicas = 4\ntopologies = ["exponential"]\n',
    "d.toml": 'experiment = "delays"\nseed = 1\nfigures = []\n[config]\nn = 8\ntaus = [0, 2]\n'
    "delay_Ks = [64, 128]\nKs = [64, 128]\ndelay_replicas = 4\n",
}

#: a user problem that kills its worker process (exit code 7) on the speedup unit's n = 4 while
#: the file named by SGPV_DIE_FLAG exists
DYING = """import os
from sgpverify import problems


def make(n, d, seed):
    if n == 4 and os.path.exists(os.environ.get("SGPV_DIE_FLAG", "/nonexistent")):
        os._exit(7)
    return problems.QuadraticCosine(n=n, d=d, seed=seed)
"""


def bits(res):
    return json.dumps(res.to_dict()["checks"]) + json.dumps(res.data, sort_keys=True, default=repr)


@pytest.fixture(scope="module")
def small():
    return suite.config_from_dict(SMALL)


@pytest.fixture(scope="module")
def serial(small):
    return bits(suite.run_suite(small, seed=3, only=ONLY, controls=True, workers=1))


@pytest.fixture(scope="module")
def run_dir(tmp_path_factory):
    d = tmp_path_factory.mktemp("runs")
    for name, text in RUNS.items():
        (d / name).write_text(text)
    return d


def unsplit(path):
    exp, cfg, seed, _ = report.load_config(path)
    return json.dumps(report.experiment_unit(exp, cfg, seed))


# ---------------------------------------------------------------- units and order


def test_results_come_back_in_unit_order_whatever_finishes_first():
    units = [sweep.Unit(f"u{i}", slow_then, (i, 1.0 if i == 0 else 0.0)) for i in range(4)]
    seen = []
    out = sweep.run_units(units, workers=2, progress=seen.append)
    assert [o[:2] for o in out] == [("unit", i) for i in range(4)]
    assert seen[-1] == "u0" and sorted(seen) == ["u0", "u1", "u2", "u3"]  # u0 finished last, counted once
    assert len({o[2] for o in out}) == 2 and os.getpid() not in {o[2] for o in out}


def test_a_dead_worker_is_named_and_the_units_beside_it_finish_and_are_cached(tmp_path):
    units = [
        sweep.Unit("slow", slow_then, (0, 1.0), key="a" * 32),
        sweep.Unit("dies", die, (9,), key="b" * 32),
        sweep.Unit("never started", slow_then, (2, 0.0), key="c" * 32),
    ]
    cache = sweep.UnitCache(tmp_path)
    with pytest.raises(WorkerDiedError, match=r"unit dies \(exit code 9\)") as info:
        sweep.run_units(units, workers=2, cache=cache)
    assert info.value.unit == "dies"
    assert [cache.load(u)[0] for u in units] == [True, False, False]


@pytest.mark.parametrize("exp", sorted(report.SPLITS))
def test_each_split_experiment_merges_to_the_unsplit_bits(tmp_path, exp):
    text = {
        "rates": RUNS["r.toml"],
        "speedup": RUNS["s.toml"],
        "delays": RUNS["d.toml"],
        "baselines": 'experiment = "baselines"\nseed = 4\n[config]\nn = 8\nbaseline_Ks = [64, 128]\nreplicas = 3\n',
    }
    path = tmp_path / f"{exp}.toml"
    path.write_text(text[exp])
    [p] = report.plan_configs([path], cache_dir=None)
    assert len(p.units) > 2  # really split
    parts = [u.fn(*u.args) for u in p.units]
    assert json.dumps(report.merge_units(exp, p.config, parts)) == unsplit(path)


def test_run_workers_2_gives_the_serial_bits_and_a_rerun_loads_the_cache(run_dir, tmp_path, capsys):
    paths = [str(run_dir / n) for n in RUNS]
    code = main(
        ["run", *paths, "--workers", "2", "--out", str(tmp_path / "f"), "--cache", str(tmp_path / "c"), "--no-progress"]
    )
    assert code == 0
    for n in RUNS:
        [f] = (tmp_path / "c").glob(f"{n[0]}-*.json")
        assert sweep.read_entry(f, f.name).decode() == unsplit(run_dir / n)  # same bits as one serial unsplit run
    n_units = len(list((tmp_path / "c" / "units").glob("*.pkl")))
    assert n_units == sum(len(report.split_config(*report.load_config(run_dir / n)[:2])) for n in RUNS) == 11
    # whole results gone, units kept: the rerun merges the cached units without running any
    for f in (tmp_path / "c").glob("*.json"):
        f.unlink()
    seen = []
    outs = report.run_configs(paths, out=tmp_path / "f", cache_dir=tmp_path / "c", progress=seen.append)
    assert len(seen) == 11 and all(m.endswith(": cached") for m in seen)
    assert [json.dumps(o[0]) for o in outs] == [unsplit(run_dir / n) for n in RUNS]


# ---------------------------------------------------------------- a dead worker, the cache and resuming


def test_dead_worker_names_its_unit_and_a_rerun_resumes_with_the_same_bits(tmp_path, monkeypatch, capsys):
    (tmp_path / "dying.py").write_text(DYING)
    (tmp_path / "s.toml").write_text(
        "\n".join(f"{k} = {list(v) if isinstance(v, tuple) else v}" for k, v in SMALL.items()) + "\n"
    )
    monkeypatch.chdir(tmp_path)
    flag = tmp_path / "die"
    monkeypatch.setenv("SGPV_DIE_FLAG", str(flag))
    cfg = suite.config_from_dict(dict(SMALL, problem="dying:make"))
    only = ["linear-speedup"]  # units speedup (dies) and weights
    reference = bits(suite.run_suite(cfg, seed=3, only=only, workers=1))  # nobody dies: no flag yet
    flag.touch()
    code = main(
        [
            "verify",
            "--quick",
            "--config",
            "s.toml",
            "--problem",
            "dying:make",
            "--only",
            "linear-speedup",
            "--seed",
            "3",
            "--workers",
            "2",
            "--no-progress",
            "--out",
            "o",
            "--cache",
            "c",
        ]
    )
    err = capsys.readouterr().err
    assert code == 3 and err.count("\n") == 1, err
    assert "unit speedup (none) (exit code 7)" in err and "rerun to resume" in err
    cached = sorted(p.name.split("-")[0] for p in (tmp_path / "c" / "units").glob("*"))
    # the units running beside it (the always-run weights and declared constants) that finished were
    # kept, nothing half-written: the speedup unit is not there
    assert cached and set(cached) <= {"declared_none", "weights_none"}, cached
    flag.unlink()
    seen = []
    res = suite.run_suite(cfg, seed=3, only=only, workers=2, cache=tmp_path / "c", progress=seen.append)
    # the CLI's cache key is the API's: what the CLI cached is loaded, the rest recomputed
    names = {"declared_none": "declared (none)", "weights_none": "weights (none)"}
    expected = {f"{names[c]}: cached" for c in cached} | {v for k, v in names.items() if k not in cached}
    assert set(seen) == expected | {"speedup (none)"} and len(seen) == 3, seen
    assert bits(res) == reference


def test_cache_key_changes_with_config_seed_experiment_variant_code_and_user_code(small, tmp_path, monkeypatch):
    def key(cfg=small, seed=3, k="rates", v=suite.NONE):
        return suite.suite_unit(cfg, seed, k, v, None, suite.setting_code(cfg), object()).key

    base = key()
    v = suite.CLAIMS[0].control.variant
    others = [
        key(cfg=dataclasses.replace(small, rate_replicas=5)),
        key(seed=4),
        key(k="speedup"),
        key(v=v),
        key(v=dataclasses.replace(v, name="none")),
        key(v=dataclasses.replace(suite.NONE, bias=1e-9)),
    ]
    assert len({base, *others}) == 1 + len(others)
    assert key() == base  # deterministic
    monkeypatch.setattr(sweep, "source_hash", lambda: "0123456789abcdef")  # other sgpverify code
    assert key() != base
    monkeypatch.undo()
    # a user's problem file: its content is in the key; a lambda is not cacheable
    (tmp_path / "userprob.py").write_text(DYING)
    monkeypatch.syspath_prepend(str(tmp_path))
    cfg = dataclasses.replace(small, problem="userprob:make")
    k1 = key(cfg=cfg)
    (tmp_path / "userprob.py").write_text(DYING + "\n# edited\n")
    assert key(cfg=cfg) != k1
    assert key(cfg=dataclasses.replace(small, problem=lambda n, d, seed: None)) is None


def test_cache_entries_are_whole_or_absent(tmp_path, monkeypatch):
    cache = sweep.UnitCache(tmp_path)
    unit = sweep.Unit("rates (none)", slow_then, (0, 0), key="k" * 32)
    cache.store(unit, {"x": [1.5, 2.0]})
    assert cache.load(unit) == (True, {"x": [1.5, 2.0]})

    def dies_halfway(fd):
        raise KeyboardInterrupt  # e.g. Ctrl-C or a full disk in the middle of the write

    other = dataclasses.replace(unit, name="speedup (none)")
    monkeypatch.setattr(sweep.os, "fsync", dies_halfway)
    with pytest.raises(KeyboardInterrupt):
        cache.store(other, {"y": 1})
    monkeypatch.undo()
    assert not cache.path(other).exists() and not list(cache.directory.glob(".tmp-*"))
    assert cache.load(other) == (False, None)
    cache.path(other).write_bytes(b"\x80\x05garbage")  # a damaged entry is never used, and named
    with pytest.warns(CacheWarning, match="damaged cache entry .*speedup"):
        assert cache.load(other) == (False, None)
    assert cache.load(dataclasses.replace(unit, key="j" * 32)) == (False, None)  # other key, same name


# ---------------------------------------------------------------- options and errors


@pytest.mark.parametrize(
    "args, message",
    [
        (["--workers", "0"], "--workers must be an integer >= 1, got 0"),
        (["--workers", "2", "--scheduler", "tcp://127.0.0.1:9"], "--workers and --scheduler are exclusive"),
        (["--scheduler", "tcp://127.0.0.1:9"], "--scheduler must be the address of a running dask scheduler"),
        (["--scheduler", "nonsense"], "got 'nonsense' (missing port number"),
        (["--scheduler", "foo://host:1"], "unknown scheme 'foo'"),
    ],
)
@pytest.mark.parametrize("cmd", ["verify", "run"])
def test_bad_workers_or_scheduler_exit_2_in_one_line(cmd, args, message, run_dir, tmp_path, capsys):
    if "--scheduler" in args and "exclusive" not in message:
        pytest.importorskip("distributed")
    target = (
        ["verify", "--quick", "--only", "mixing-constants"] if cmd == "verify" else ["run", str(run_dir / "r.toml")]
    )
    t0 = time.perf_counter()
    code = main(target + args + ["--out", str(tmp_path / "o"), "--no-progress", "--cache", str(tmp_path / "c")])
    err = capsys.readouterr().err
    assert code == 2 and err.count("\n") == 1 and message in err, err
    assert time.perf_counter() - t0 < 15  # bounded: nothing listening fails at once
    assert not (tmp_path / "c").exists()  # nothing ran


def test_missing_dask_names_the_option_and_the_extra(monkeypatch, tmp_path, capsys):
    monkeypatch.setitem(sys.modules, "distributed", None)  # import distributed -> ImportError
    code = main(
        [
            "verify",
            "--quick",
            "--only",
            "mixing-constants",
            "--scheduler",
            "tcp://127.0.0.1:9",
            "--out",
            str(tmp_path / "o"),
            "--no-progress",
        ]
    )
    err = capsys.readouterr().err
    assert code == 2 and err.count("\n") == 1
    assert "--scheduler needs dask.distributed" in err and "pip install 'sgpverify[cluster]'" in err
    with pytest.raises(ClusterError, match=r"scheduler needs dask.distributed.*sgpverify\[cluster\]"):
        suite.run_suite(suite.QUICK, only=["mixing-constants"], scheduler="tcp://127.0.0.1:9")


def test_importing_sgpverify_does_not_import_dask():
    code = (
        "import sys, sgpverify, sgpverify.suite, sgpverify.report, sgpverify.sweep, sgpverify.cli; "
        "print(sorted(m for m in ('dask', 'distributed') if m in sys.modules))"
    )
    out = subprocess.run(
        [sys.executable, "-c", code],
        capture_output=True,
        text=True,
        check=True,
        env=dict(os.environ, PYTHONPATH=os.pathsep.join(sys.path)),
    ).stdout
    assert out.strip() == "[]"


# ---------------------------------------------------------------- a dask LocalCluster


@pytest.fixture(scope="module")
def cluster():
    distributed = pytest.importorskip("distributed")
    with distributed.LocalCluster(n_workers=2, processes=True, threads_per_worker=1, dashboard_address=None) as lc:
        yield lc


def test_local_cluster_gives_the_serial_bits_for_verify_and_run(cluster, small, serial, run_dir, tmp_path):
    seen = []
    res = suite.run_suite(
        small, seed=3, only=ONLY, controls=True, scheduler=cluster.scheduler_address, progress=seen.append
    )
    assert bits(res) == serial and len(seen) == len(suite.plan_units(small, True, ONLY)) == 7
    paths = [run_dir / n for n in RUNS]
    outs = report.run_configs(paths, out=tmp_path / "f", cache_dir=None, scheduler=cluster.scheduler_address)
    assert [json.dumps(o[0]) for o in outs] == [unsplit(p) for p in paths]
    # the workers really ran them
    logs = cluster.get_logs() if hasattr(cluster, "get_logs") else None
    assert logs is None or len(cluster.scheduler_info["workers"]) == 2


def test_local_cluster_from_the_command_line(cluster, run_dir, tmp_path, capsys):
    code = main(
        [
            "run",
            str(run_dir / "d.toml"),
            "--scheduler",
            cluster.scheduler_address,
            "--out",
            str(tmp_path / "f"),
            "--cache",
            str(tmp_path / "c"),
            "--no-progress",
        ]
    )
    assert code == 0 and "d.toml: ran" in capsys.readouterr().out
    [f] = (tmp_path / "c").glob("d-*.json")
    assert sweep.read_entry(f, f.name).decode() == unsplit(run_dir / "d.toml")


@pytest.mark.slow  # a second cluster, about 6 s
def test_local_cluster_dead_worker_is_named(tmp_path):
    dask = pytest.importorskip("dask")
    distributed = pytest.importorskip("distributed")
    units = [sweep.Unit("quick", slow_then, (0, 0.0), key="a" * 32), sweep.Unit("dies", die, (9,), key="b" * 32)]
    cache = sweep.UnitCache(tmp_path)
    with (
        dask.config.set({"distributed.scheduler.allowed-failures": 0}),
        distributed.LocalCluster(n_workers=2, processes=True, threads_per_worker=1, dashboard_address=None) as lc,
    ):
        with pytest.raises(WorkerDiedError, match=r"a dask worker died while running unit dies") as info:
            sweep.run_units(units, scheduler=lc.scheduler_address, cache=cache)
    assert info.value.unit == "dies"


def test_a_figure_plans_the_experiments_its_bound_lines_need(tmp_path):
    """consensus_vs_K draws the bound (b2), which needs the schedules' S2 from the mixing
    experiment: `run` plans mixing beside the config's rates experiment, on the same settings,
    and the figure gets both (its bound lines are there); a rerun is cached, both parts."""
    path = tmp_path / "r.toml"
    path.write_text(RUNS["r.toml"].replace("figures = []", 'figures = ["consensus_vs_K"]'))
    planned = report.plan_configs([path], cache_dir=tmp_path / "c")
    assert [(p.experiment, p.companion, p.figures) for p in planned] == [
        ("rates", False, ["consensus_vs_K"]),
        ("mixing", True, []),
    ]
    assert planned[0].cache_file != planned[1].cache_file
    [(result, figs, hit)] = report.run_configs([path], out=tmp_path / "f", cache_dir=tmp_path / "c")
    assert not hit and set(figs) == {"consensus_vs_K"} and "schedules" in result
    [(again, _, hit)] = report.run_configs([path], out=tmp_path / "f", cache_dir=tmp_path / "c")
    assert hit and json.dumps(again) == json.dumps(result)
