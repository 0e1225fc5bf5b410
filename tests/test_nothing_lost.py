"""Nothing lost: the user's files survive every --out, a damaged cache entry is never used, and
locations are checked before any work. Each check with its control."""

import json
import os
import time
import warnings

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from sgpverify import outdir, plots, report, sweep
from sgpverify.cli import main
from sgpverify.errors import CacheWarning

# one worker: the tests are about the locations, and a pool of worker processes would only add its start
ONLY = ["--quick", "--only", "mixing-constants", "--no-progress", "--no-cache", "--workers", "1"]


@pytest.fixture
def home(tmp_path, monkeypatch):
    """A user's working directory with files of their own."""
    work = tmp_path / "work"
    (work / "data").mkdir(parents=True)
    (work / "notes.txt").write_text("my notes")
    (work / "data" / "a.csv").write_text("1,2\n")
    monkeypatch.chdir(work)
    return work


def _files(root):
    return {str(p.relative_to(root)): p.read_bytes() for p in sorted(root.rglob("*")) if p.is_file()}


@pytest.mark.parametrize("out", [".", "..", "data/..", "", "notes.txt", "notes.txt/rep", "data"])
def test_verify_refuses_an_out_that_holds_the_users_files_before_any_work(home, capsys, out):
    before = _files(home.parent)
    t0 = time.perf_counter()
    rc = main(["verify", *ONLY, "--out", out])
    err = capsys.readouterr().err
    assert rc == 2 and err.count("\n") == 1 and "--out" in err
    assert time.perf_counter() - t0 < 5  # before the work (the suite would take longer)
    assert _files(home.parent) == before  # nothing deleted, nothing written


def test_the_working_directory_is_refused_even_with_force(home, capsys):
    for out in (".", "..", str(home)):
        assert main(["verify", *ONLY, "--out", out, "--force"]) == 2
    assert "working directory or one of its parents" in capsys.readouterr().err
    assert (home / "notes.txt").read_text() == "my notes"


def test_force_writes_beside_the_users_files_and_replaces_only_its_own(home, capsys):
    assert main(["verify", *ONLY, "--out", "rep"]) == 0  # the control: a new directory is sgpverify's
    (home / "rep" / "mine.txt").write_text("keep me")
    (home / "rep" / "sub").mkdir()
    assert main(["verify", *ONLY, "--out", "rep"]) == 2  # it holds a file of the user's now
    assert main(["verify", *ONLY, "--out", "rep", "--force"]) == 0
    assert (home / "rep" / "mine.txt").read_text() == "keep me" and (home / "rep" / "sub").is_dir()
    man = json.loads((home / "rep" / "manifest.json").read_text())
    assert "mine.txt" not in man["files"] and "report.md" in man["files"]
    # an earlier report's files that are not written again are removed; the user's are not
    (home / "rep" / "stale.png").write_text("x")
    man["files"].append("stale.png")
    (home / "rep" / "manifest.json").write_text(json.dumps(man))
    assert main(["verify", *ONLY, "--out", "rep"]) == 2  # mine.txt still there
    assert main(["verify", *ONLY, "--out", "rep", "--force"]) == 0
    assert not (home / "rep" / "stale.png").exists() and (home / "rep" / "mine.txt").exists()
    capsys.readouterr()


def test_a_report_of_an_earlier_version_is_sgpverifys_own(home, capsys):
    old = home / "old"
    old.mkdir()
    (old / "manifest.json").write_text(json.dumps({"versions": {"sgpverify": "0.1.0"}, "seed": 0}))
    (old / "report.md").write_text("old")
    (old / "delays.png").write_text("old figure")
    assert main(["verify", *ONLY, "--out", "old"]) == 0
    assert not (old / "delays.png").exists() and (old / "report.md").read_text() != "old"
    # the control: the same files without sgpverify's manifest are the user's
    (home / "theirs").mkdir()
    (home / "theirs" / "report.md").write_text("their report")
    assert main(["verify", *ONLY, "--out", "theirs"]) == 2
    capsys.readouterr()
    assert outdir.LEGACY_FILES >= {f"{name}.png" for name in plots.FIGURES}


def test_the_python_api_refuses_alike(home):
    from sgpverify import suite

    res = suite.verify(only=["mixing-constants"])
    with pytest.raises(ValueError, match="outdir 'data' holds 1 file"):
        report.write_report(res, "data")
    with pytest.raises(ValueError, match="working directory"):
        report.write_report(res, ".", force=True)
    assert report.write_report(res, "data", force=True).is_file() and (home / "data" / "a.csv").exists()


@pytest.mark.parametrize("opt", ["--cache", "--out"])
def test_locations_that_cannot_be_written_fail_in_under_a_second(home, capsys, opt):
    ro = home / "ro"
    ro.mkdir()
    os.chmod(ro, 0o500)
    try:
        for bad in ("notes.txt/x", "", "ro/sub") if os.geteuid() != 0 else ("notes.txt/x", ""):
            argv = ["verify", "--quick", "--no-progress", opt, bad] + (["--out", "rep"] if opt == "--cache" else [])
            t0 = time.perf_counter()
            assert main(argv) == 2
            assert time.perf_counter() - t0 < 1.0
            assert opt in capsys.readouterr().err
    finally:
        os.chmod(ro, 0o700)


# ---------------------------------------------------------------- the cache proves its entries


def _unit(key="k" * 32):
    return sweep.Unit("rates (none)", len, ("abc",), key=key)


@settings(max_examples=60, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(data=st.data())
def test_a_damaged_unit_entry_is_never_used(tmp_path, data):
    cache = sweep.UnitCache(tmp_path / data.draw(st.uuids()).hex)
    value = {"x": [1.5, 2.0, -3.25], "label": "rates"}
    cache.store(_unit(), value)
    path = cache.path(_unit())
    raw = bytearray(path.read_bytes())
    if data.draw(st.booleans(), label="truncate"):
        raw = raw[: data.draw(st.integers(0, len(raw) - 1), label="length")]
    else:
        i = data.draw(st.integers(0, len(raw) - 1), label="byte")
        raw[i] ^= 1 << data.draw(st.integers(0, 7), label="bit")
    path.write_bytes(bytes(raw))
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        hit, got = cache.load(_unit())
    assert not hit and got is None  # never used, whatever still unpickles
    assert any(issubclass(w.category, CacheWarning) and str(path) in str(w.message) for w in caught)
    cache.store(_unit(), value)  # recomputed and rewritten: whole again
    assert cache.load(_unit()) == (True, value)


@settings(max_examples=40, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(data=st.data())
def test_a_damaged_json_entry_is_never_used(tmp_path, data):
    path = tmp_path / data.draw(st.uuids()).hex / "d-0123.json"
    payload = json.dumps({"runs": [{"K": 64, "stationarity": [0.0417465957401076, 0.045]}]}).encode()
    sweep.write_entry(path, path.name, payload)
    assert sweep.read_entry(path, path.name) == payload  # the control: a whole entry is used
    raw = bytearray(path.read_bytes())
    if data.draw(st.booleans(), label="truncate"):
        raw = raw[: data.draw(st.integers(0, len(raw) - 1), label="length")]
    else:  # e.g. one changed digit
        i = data.draw(st.integers(0, len(raw) - 1), label="byte")
        raw[i] = (raw[i] + data.draw(st.integers(1, 255), label="delta")) % 256
    path.write_bytes(bytes(raw))
    with pytest.warns(CacheWarning, match="damaged cache entry"):
        assert sweep.read_entry(path, path.name) is None


def test_run_recomputes_a_damaged_whole_result_and_says_so(tmp_path, capsys):
    cfg = tmp_path / "m.toml"
    cfg.write_text('experiment = "mixing"\nseed = 0\n[config]\nn = 4\nmixing_horizon = 20\n')
    argv = ["run", str(cfg), "--out", str(tmp_path / "f"), "--cache", str(tmp_path / "c"), "--no-progress"]
    assert main(argv) == 0
    [f] = (tmp_path / "c").glob("m-*.json")
    good = f.read_bytes()
    f.write_bytes(good[: len(good) // 2])  # truncated
    assert main(argv) == 0
    out = capsys.readouterr()
    assert "warning: damaged cache entry" in out.err and f.name in out.err and "m.toml: ran" in out.out
    assert f.read_bytes() == good  # rewritten, the same bits
    assert main(argv) == 0 and "m.toml: cached" in capsys.readouterr().out  # the control: a whole entry is used


# ---------------------------------------------------------------- nothing silently ignored, messages true


@pytest.mark.parametrize(
    "argv, message",
    [
        (["--topology", "torus", "--rows", "3", "--nodes", "16"], "rows must divide n = 16, got 3 (from --rows)"),
        (["--delay", "random", "--only", "mixing-constants"], "--delay applies to delayed runs"),
    ],
)
def test_verify_refuses_an_option_that_would_be_ignored(home, capsys, argv, message):
    assert main(["verify", "--quick", "--out", "o", *argv]) == 2
    assert message in capsys.readouterr().err and not (home / "o").exists()


def test_options_that_apply_are_still_taken(home, capsys):
    # the controls: rows that divide n, a delay model that the delay checks use
    assert main(["verify", *ONLY, "--topology", "torus", "--rows", "2", "--nodes", "16", "--out", "a"]) == 0
    assert "torus(2x8)" in (home / "a" / "data.json").read_text()
    (home / "short.toml").write_text("delay_Ks = [64, 128]\ndelay_replicas = 4\n")  # a short delay ladder
    cfg = ["--quick", "--config", "short.toml", "--no-progress", "--no-cache", "--delay", "random", "--workers", "1"]
    assert main(["verify", *cfg, "--only", "delay-consensus", "--out", "b"]) in (0, 4)
    got = json.loads((home / "b" / "checks.json").read_text())["config"]
    assert (got["delay"], got["delay_Ks"], got["delay_replicas"]) == ("random", [64, 128], 4)
    capsys.readouterr()


def test_topology_beside_topologies_in_a_config_is_refused(home, capsys):
    (home / "t.toml").write_text('topology = "ring"\ntopologies = ["exponential"]\n')
    assert main(["verify", "--quick", "--config", "t.toml", "--out", "o"]) == 2
    assert "topology and topologies both set in t.toml" in capsys.readouterr().err


def test_a_complex_matrix_is_refused_a_real_one_in_complex_dtype_is_taken():
    import numpy as np

    import sgpverify as sv

    J = np.full((2, 2), 0.5)
    with pytest.raises(ValueError, match="P must be a real matrix, got complex entries"):
        sv.check_mixing(J + 1j * np.eye(2))
    with warnings.catch_warnings():
        warnings.simplefilter("error")  # no ComplexWarning: nothing is dropped
        assert sv.check_mixing(J + 0j).passed
    with pytest.raises(ValueError, match="x0 must be real"):
        sv.simulate(sv.problems.QuadraticCosine(2, 2), J, step_size=0.1, n_iter=2, x0=np.ones(2) * 1j)


@pytest.mark.parametrize("topology, nodes", [("exponential", 8), ("ring", 5), ("random-peer", 8), ("exponential", 100)])
def test_the_least_lyapunov_steps_is_the_documented_one(capsys, topology, nodes):
    from sgpverify import graphs
    from sgpverify.assumptions.rates import min_lyapunov_steps

    topo = graphs.by_name(topology, nodes, seed=0)
    least = min_lyapunov_steps(topo.period)
    argv = ["mixing", "--topology", topology, "--nodes", str(nodes), "--horizon", "20", "--lyapunov-steps"]
    assert main(argv + [str(least)]) in (0, 1)  # exactly the least runs
    if least > 4:
        assert main(argv + [str(least - 1)]) == 2
        assert f"--lyapunov-steps must be at least {least} for this schedule" in capsys.readouterr().err
    assert main(argv + ["3"]) == 2  # below the documented 4 for every schedule
    capsys.readouterr()


def test_a_toml_file_that_is_not_utf8_is_named(home, capsys):
    (home / "bad.toml").write_bytes(b"n = 8\n\xff\xfe\n")
    assert main(["verify", "--quick", "--config", "bad.toml", "--out", "o"]) == 2
    assert "--config 'bad.toml' is not valid TOML: not UTF-8" in capsys.readouterr().err
    assert main(["run", "bad.toml"]) == 2
    assert "'bad.toml' is not valid TOML" in capsys.readouterr().err
