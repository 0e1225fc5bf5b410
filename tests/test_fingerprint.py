"""The numeric fingerprint of the platform (sgpverify.fingerprint): what "the same bits" needs beyond
the same code and versions. It is deterministic on one machine (in a process, in fresh processes, with
any number of BLAS threads), one ulp in one probe changes it, it is part of every cache key, and a dask
worker with another fingerprint is used with a PlatformMismatchWarning while its units are not cached
(a worker with other library versions is still refused).

The heterogeneous cluster is simulated: a 2-worker dask LocalCluster whose workers are told to report
another fingerprint (the dask tests skip without the ``cluster`` extra)."""

import json
import os
import subprocess
import sys
import warnings

import numpy as np
import pytest
import scipy.linalg
import scipy.special
from _sweep_helpers import slow_then

from sgpverify import report, suite, sweep
from sgpverify.cli import main
from sgpverify.errors import ClusterError, PlatformMismatchWarning
from sgpverify.fingerprint import platform_fingerprint

OTHER = "f" * 16  # the fingerprint of a simulated other platform
SMALL = dict(n=8, mixing_horizon=40, bound_horizon=40, theorem_K_cap=300, Ks=(64, 128, 256), rate_replicas=4)
DELAYS = (
    'experiment = "delays"\nseed = 1\n[config]\nn = 8\ntaus = [0, 2]\ndelay_Ks = [64, 128]\nKs = [64, 128]\n'
    "delay_replicas = 4\n"
)


@pytest.fixture
def fresh():
    """The fingerprint recomputed in the test (and again after it, without the test's patches)."""
    platform_fingerprint.cache_clear()
    yield
    platform_fingerprint.cache_clear()


# ---------------------------------------------------------------- the fingerprint


def test_the_fingerprint_is_16_hex_digits_and_the_same_on_every_call(fresh):
    fp = platform_fingerprint()
    assert len(fp) == 16 and int(fp, 16) >= 0
    assert platform_fingerprint() == fp
    platform_fingerprint.cache_clear()
    assert platform_fingerprint() == fp  # computed again, not only cached
    assert sweep.platform_fingerprint is platform_fingerprint and sweep.environment()["numeric"] == fp


def test_fresh_processes_with_any_blas_threads_have_the_same_fingerprint():
    # dask and local workers run with one BLAS thread, this process with the default: same fingerprint
    code = "from sgpverify.fingerprint import platform_fingerprint; print(platform_fingerprint())"
    base = dict(os.environ, PYTHONPATH=os.pathsep.join(sys.path))
    one = {v: "1" for v in ("OMP_NUM_THREADS", "OPENBLAS_NUM_THREADS", "MKL_NUM_THREADS")}
    got = [
        subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True, env=env).stdout.strip()
        for env in (base, dict(base, **one))
    ]
    assert got == [platform_fingerprint()] * 2


def _one_ulp(fn):
    """``fn`` with the first element of its result moved up by one ulp."""

    def perturbed(*args, **kwargs):
        out = np.array(fn(*args, **kwargs))
        first = (0,) * out.ndim
        out.real[first] = np.nextafter(out.real[first], np.inf)
        return out

    return perturbed


@pytest.mark.parametrize(
    "module, name",
    [
        (np, "matmul"),  # BLAS gemm / gemv
        (np, "dot"),
        (np.linalg, "solve"),  # LAPACK
        (np.linalg, "eigvals"),
        (scipy.linalg, "solve"),  # scipy's LAPACK
        (np, "sum"),  # numpy's pairwise summation
        (np, "exp"),  # SIMD elementwise
        (np, "sin"),
        (scipy.special, "stdtrit"),  # compiled scipy loops
    ],
    ids=lambda x: getattr(x, "__name__", x),
)
def test_one_ulp_in_one_probe_changes_the_fingerprint(fresh, monkeypatch, module, name):
    base = platform_fingerprint()
    real = getattr(module, name)
    monkeypatch.setattr(module, name, _one_ulp(real))
    probe = {"matmul": ((np.eye(3),) * 2), "solve": (np.eye(3), np.ones(3)), "eigvals": (np.eye(3),)}
    args = probe.get(name, (np.linspace(0.1, 0.9, 5),) * (2 if name in ("dot", "stdtrit") else 1))
    moved, exact = np.array(getattr(module, name)(*args)), np.array(real(*args))
    first = (0,) * exact.ndim
    assert np.count_nonzero(moved != exact) == 1 and moved.real[first] == np.nextafter(exact.real[first], np.inf)
    platform_fingerprint.cache_clear()
    assert platform_fingerprint() != base
    monkeypatch.undo()
    platform_fingerprint.cache_clear()
    assert platform_fingerprint() == base


# ---------------------------------------------------------------- the cache keys


def test_every_cache_key_changes_with_the_fingerprint(tmp_path, monkeypatch):
    cfg = suite.config_from_dict(SMALL)
    identity = {"kind": "test", "seed": 3}
    unit = sweep.Unit("u", slow_then, (0, 0.0), sweep.unit_key(identity))
    run_key = report._cache_key("rates", cfg, 3)
    sweep.UnitCache(tmp_path).store(unit, "bits of this platform")
    monkeypatch.setattr(sweep, "platform_fingerprint", lambda: OTHER)  # the same cache, read on another platform
    assert sweep.environment()["numeric"] == OTHER
    assert sweep.unit_key(identity) != unit.key and report._cache_key("rates", cfg, 3) != run_key
    there = sweep.Unit("u", slow_then, (0, 0.0), sweep.unit_key(identity))
    assert sweep.UnitCache(tmp_path).load(there) == (False, None)  # recomputed, not reused
    monkeypatch.undo()
    assert sweep.unit_key(identity) == unit.key and report._cache_key("rates", cfg, 3) == run_key


def _marking(real, names, fingerprint=OTHER):
    """``run_units`` as if a worker of platform ``fingerprint`` computed the units named ``names``:
    reported in ``foreign`` and not cached (what run_units does for them)."""

    def run_units(units, *, foreign=None, **kwargs):
        units = [sweep.Unit(u.name, u.fn, u.args, None) if u.name in names else u for u in units]
        out = real(units, foreign=foreign, **kwargs)
        foreign.update({u.name: fingerprint for u in units if u.name in names})
        return out

    return run_units


def test_units_computed_from_another_platforms_data_are_not_cached_and_the_manifest_says_mixed(tmp_path, monkeypatch):
    from sgpverify.suite import runner

    cfg = suite.config_from_dict(SMALL)
    monkeypatch.setattr(runner, "run_units", _marking(sweep.run_units, {"mixing (none)"}))
    res = suite.run_suite(cfg, seed=3, only=["theorem1-bound"], cache=tmp_path)
    assert res.foreign == {"mixing (none)": OTHER}
    cached = sorted(p.name.split("-")[0] for p in (tmp_path / "units").glob("*.pkl"))
    assert cached == ["declared_none", "weights_none"]  # theorem took the other platform's mixing data
    m = report.manifest(res.config, res.seed, foreign=res.foreign)["numeric_platform"]
    assert m == {
        "fingerprint": platform_fingerprint(),
        "machine": m["machine"],
        "mixed": True,
        "foreign_units": {"mixing (none)": OTHER},
    }
    monkeypatch.undo()
    res = suite.run_suite(cfg, seed=3, only=["theorem1-bound"], cache=tmp_path)  # this platform alone
    assert res.foreign == {} and len(list((tmp_path / "units").glob("*.pkl"))) == 4
    assert report.manifest(res.config, res.seed)["numeric_platform"]["mixed"] is False


def test_a_run_result_with_a_unit_of_another_platform_is_not_cached(tmp_path, monkeypatch):
    (tmp_path / "d.toml").write_text(DELAYS)
    [p] = report.plan_configs([tmp_path / "d.toml"], tmp_path / "c")
    monkeypatch.setattr(sweep, "run_units", _marking(sweep.run_units, {p.units[0].name}))
    [(mixed, _, hit)] = report.run_configs([tmp_path / "d.toml"], out=tmp_path / "f", cache_dir=tmp_path / "c")
    assert not hit and not list((tmp_path / "c").glob("d-*.json")) and not list((tmp_path / "c").glob("units/*"))
    monkeypatch.undo()
    [(local, _, hit)] = report.run_configs([tmp_path / "d.toml"], out=tmp_path / "f", cache_dir=tmp_path / "c")
    assert not hit and local == mixed and len(list((tmp_path / "c").glob("d-*.json"))) == 1


# ---------------------------------------------------------------- the workers' check


class FakeClient:
    """A dask client whose workers report ``environment()`` changed by ``changes[address]``."""

    def __init__(self, changes):
        self.changes = changes

    def run(self, fn):
        return {addr: dict(fn(), **change) for addr, change in self.changes.items()}


def test_a_worker_with_another_fingerprint_is_warned_about_with_both_fingerprints():
    here = platform_fingerprint()
    client = FakeClient({"tcp://a:1": {}, "tcp://b:2": {"numeric": OTHER}})
    with pytest.warns(PlatformMismatchWarning) as caught:
        other = sweep._check_workers(client, "--scheduler", "tcp://s:8786")
    assert other == {"tcp://b:2": OTHER}
    [w] = caught
    msg = str(w.message)
    assert "\n" not in msg and "tcp://a:1" not in msg
    assert f"worker tcp://b:2 (fingerprint {OTHER}) runs on another numeric platform" in msg
    assert f"this process (fingerprint {here})" in msg and "last bits" in msg and "not cached" in msg
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        assert sweep._check_workers(FakeClient({"tcp://a:1": {}}), "--scheduler", "tcp://s:8786") == {}
    assert caught == []  # the same platform everywhere: no warning


def test_a_worker_with_other_library_versions_is_still_refused():
    client = FakeClient({"tcp://a:1": {}, "tcp://b:2": {"numpy": "0.0", "numeric": OTHER}})
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        with pytest.raises(ClusterError, match=r"worker tcp://b:2 runs other code or libraries.*numpy 0\.0") as info:
            sweep._check_workers(client, "--scheduler", "tcp://s:8786")
    assert "numeric" not in str(info.value) and caught == []  # refused, not warned about


# ---------------------------------------------------------------- a simulated heterogeneous LocalCluster


@pytest.fixture(scope="module")
def cluster():
    distributed = pytest.importorskip("distributed")
    with (
        distributed.LocalCluster(n_workers=2, processes=True, threads_per_worker=1, dashboard_address=None) as lc,
        distributed.Client(lc, set_as_default=False) as client,
    ):
        yield lc, client, sorted(client.scheduler_info()["workers"])


def _pretend(client, addresses, fingerprint=None, numpy=None):
    """Make the workers at ``addresses`` report another fingerprint (and numpy version); none: undo."""

    def patch():
        from sgpverify import sweep

        real = sweep.__dict__.setdefault("real_platform", (sweep.platform_fingerprint, sweep.environment))
        sweep.platform_fingerprint, sweep.environment = real
        if fingerprint is not None:
            sweep.platform_fingerprint = lambda: fingerprint
        if numpy is not None:
            sweep.environment = lambda: dict(real[1](), numpy=numpy)

    client.run(patch, workers=list(addresses))


def test_a_mixed_cluster_gives_the_results_with_a_warning_and_caches_only_this_platforms_units(cluster, tmp_path):
    lc, client, addrs = cluster
    units = [sweep.Unit(f"u{i}", slow_then, (i, 0.3), key=f"{i:032d}") for i in range(8)]
    foreign = {}
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always", PlatformMismatchWarning)
        sweep.run_units(
            units[:2], scheduler=lc.scheduler_address, cache=sweep.UnitCache(tmp_path / "a"), foreign=foreign
        )
    assert not [w for w in caught if w.category is PlatformMismatchWarning]  # one platform: no warning
    assert foreign == {} and len(list((tmp_path / "a" / "units").glob("*.pkl"))) == 2  # every unit cached
    _pretend(client, addrs[:1], OTHER)
    try:
        cache, foreign = sweep.UnitCache(tmp_path / "b"), {}
        with pytest.warns(PlatformMismatchWarning, match=f"worker {addrs[0]} \\(fingerprint {OTHER}\\)"):
            out = sweep.run_units(units, scheduler=lc.scheduler_address, cache=cache, foreign=foreign)
    finally:
        _pretend(client, addrs)
    assert [o[:2] for o in out] == [("unit", i) for i in range(8)]
    assert set(foreign.values()) == {OTHER} and 0 < len(foreign) < len(units)  # both workers ran some
    assert [cache.load(u)[0] for u in units] == [u.name not in foreign for u in units]


def test_a_cluster_of_another_platform_from_the_command_line(cluster, tmp_path, capsys):
    lc, client, addrs = cluster
    _pretend(client, addrs[:1], OTHER)
    _pretend(client, addrs[1:], "e" * 16)
    try:
        code = main(
            ["verify", "--quick", "--only", "mixing-constants", "--scheduler", lc.scheduler_address]
            + ["--out", str(tmp_path / "o"), "--cache", str(tmp_path / "c"), "--no-progress"]
        )
    finally:
        _pretend(client, addrs)
    err = capsys.readouterr().err
    assert code == 0 and err.count("\n") == 1 and err.startswith("sgpverify verify: warning: "), err
    assert f"workers {addrs[0]} (fingerprint {OTHER}), {addrs[1]} (fingerprint {'e' * 16}) run on another" in err
    assert f"(fingerprint {platform_fingerprint()})" in err
    m = json.loads((tmp_path / "o" / "manifest.json").read_text())["numeric_platform"]
    assert m["fingerprint"] == platform_fingerprint() and m["mixed"] is True
    assert sorted(m["foreign_units"]) == ["declared (none)", "mixing (none)", "weights (none)"]
    assert "Mixed numeric platforms: 3 unit(s) ran on dask workers" in (tmp_path / "o" / "report.md").read_text()
    assert not list((tmp_path / "c").glob("units/*"))  # nothing of theirs served later as this platform's


def test_a_cluster_worker_with_other_library_versions_is_refused(cluster, tmp_path):
    lc, client, addrs = cluster
    _pretend(client, addrs[1:], OTHER, numpy="0.0")
    try:
        with pytest.raises(ClusterError, match=f"worker {addrs[1]} runs other code or libraries.*numpy 0\\.0"):
            sweep.run_units([sweep.Unit("u", slow_then, (0, 0.0))], scheduler=lc.scheduler_address)
    finally:
        _pretend(client, addrs)
