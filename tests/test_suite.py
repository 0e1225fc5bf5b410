"""The verification suite: the quick preset runs in the default test run (about
a minute), the full preset under the slow marker. Checks whose claim is a firm
inequality or invariant (bounds, mass, q <= q_theory) must pass; rate checks
are asymptotic statements, so their verdicts are whatever the numbers say
(they are reported, not forced), and the tests only require the fitted slopes
to be near the predicted exponents (|slope - predicted| < 0.05 at these K: the
higher-order terms of the derived bound are O(gamma) = O(K^-1/2) relative)."""

import json

import numpy as np
import pytest

from sgpverify import suite
from sgpverify.cli import main
from sgpverify.report import format_table, write_report

FIRM = ("theorem1-bound", "descent-inequality", "mass-conservation", "mixing-constants")


@pytest.fixture(scope="module")
def quick():
    return suite.run_suite(suite.QUICK, seed=0)


def _slope(check):
    return float(check.measured.split()[0])


def _check_result(res):
    names = [c.name for c in res.checks]
    assert names == list(suite.CHECK_NAMES)
    by = {c.name: c for c in res.checks}
    for name in FIRM:
        assert by[name].passed, (name, by[name].measured, by[name].detail)
    assert abs(_slope(by["stationarity-rate"]) + 0.5) < 0.05
    assert abs(_slope(by["linear-speedup"]) + 0.5) < 0.05
    assert abs(_slope(by["consensus-rate"]) + 1.0) < 0.05
    # the published bound is loose, and the check says where it was tested
    assert "K >=" in by["theorem1-bound"].measured
    json.dumps(res.to_dict())


def test_quick_suite(quick):
    _check_result(quick)


def test_verdicts_follow_their_criteria(quick):
    by = {c.name: c for c in quick.checks}
    # rate verdicts are exactly "the 95% interval reaches the predicted slope or below"
    for name, pred in (("stationarity-rate", -0.5), ("linear-speedup", -0.5), ("consensus-rate", -1.0)):
        lo = float(by[name].measured.split("[")[1].split(",")[0])
        assert by[name].passed == (lo <= pred)
    # mass errors really are round-off
    runs = quick.data["rates"]["runs"]
    assert max(r["mass_error"] for r in runs) < 1e-9


@pytest.mark.needs_matplotlib
def test_report_files_and_atomic_replace(quick, tmp_path):
    out = tmp_path / "rep"
    write_report(quick, out)
    files = {p.name for p in out.iterdir()}
    assert {"report.md", "data.json", "checks.json", "manifest.json", "stationarity_vs_K.png",
            "consensus_vs_K.png", "speedup_vs_n.png", "delays.png", "graph_families.png",
            "pushsum_weights.png", "mixing_heatmaps.png"} <= files
    text = (out / "report.md").read_text()
    for c in quick.checks:
        assert c.name in text
    man = json.loads((out / "manifest.json").read_text())
    assert man["seed"] == 0 and "numpy" in man["versions"]
    # a second write replaces the directory; no temporary directories remain
    write_report(quick, out)
    assert [p.name for p in tmp_path.iterdir()] == ["rep"]


def test_report_failure_leaves_nothing_behind(quick, tmp_path, monkeypatch):
    from sgpverify import plots

    def boom(*a, **k):
        raise RuntimeError("disk full")

    monkeypatch.setattr(plots, "render_all", boom)
    with pytest.raises(RuntimeError):
        write_report(quick, tmp_path / "rep")
    assert list(tmp_path.iterdir()) == []


def test_table_has_every_check(quick):
    t = format_table(quick.checks)
    assert t.splitlines()[0].split() == ["check", "measured", "predicted", "verdict"]
    assert all(c.name in t for c in quick.checks)


@pytest.mark.needs_matplotlib
def test_cli_verify_json_and_exit_code(quick, tmp_path, monkeypatch, capsys):
    monkeypatch.setattr(suite, "run_suite", lambda cfg, seed=0, progress=None: quick)
    code = main(["verify", "--quick", "--out", str(tmp_path / "o"), "--json", "--no-progress"])
    out = json.loads(capsys.readouterr().out)
    assert code == (0 if quick.passed else 1)
    assert [c["name"] for c in out["checks"]] == list(suite.CHECK_NAMES)
    for c in out["checks"]:
        assert set(c) >= {"name", "passed", "measured", "predicted", "detail"}


def test_cli_verify_bad_input(tmp_path, capsys):
    f = tmp_path / "file"
    f.write_text("x")
    assert main(["verify", "--quick", "--out", str(f)]) == 2
    assert "--out must be a directory" in capsys.readouterr().err
    assert main(["verify", "--seed", "-1"]) == 2
    assert "seed must be an integer >= 0, got -1" in capsys.readouterr().err


@pytest.mark.needs_matplotlib
def test_run_config_caches_and_replots(tmp_path):
    from sgpverify.report import run_config

    cfg = tmp_path / "w.toml"
    cfg.write_text('experiment = "weights"\nseed = 1\nfigures = ["pushsum_weights"]\n[config]\nn = 6\n')
    res1, paths, hit = run_config(cfg, out=tmp_path / "figs", cache_dir=tmp_path / "cache")
    assert not hit and (tmp_path / "figs" / "pushsum_weights.png").exists()
    res2, _, hit = run_config(cfg, out=tmp_path / "figs", cache_dir=tmp_path / "cache")
    assert hit and res1 == res2
    assert np.min(res1["weight_min"]) < 1 < np.max(res1["weight_max"])


@pytest.mark.parametrize(
    "text, message",
    [
        ('experiment = "nope"', "experiment must be one of"),
        ('experiment = "weights"\n[config]\nbogus = 1', "unknown bogus"),
        ('experiment = "weights"\nfigures = ["pie"]', "figures must be among"),
        ("experiment = ", "is not valid TOML"),
    ],
)
def test_run_config_errors(tmp_path, text, message, capsys):
    cfg = tmp_path / "c.toml"
    cfg.write_text(text)
    assert main(["run", str(cfg), "--out", str(tmp_path / "f"), "--cache", str(tmp_path / "c")]) == 2
    assert message in capsys.readouterr().err


@pytest.mark.slow
def test_full_suite():
    _check_result(suite.run_suite(suite.FULL, seed=0))


@pytest.mark.needs_matplotlib
def test_cli_run_prints_rate_fits(tmp_path, capsys):
    cfg = tmp_path / "r.toml"
    cfg.write_text('experiment = "rates"\nseed = 2\nfigures = ["consensus_vs_K"]\n'
                   "[config]\nn = 4\nd = 3\nKs = [64, 128, 256, 512]\nreplicas = 3\n")
    code = main(["run", str(cfg), "--out", str(tmp_path / "f"), "--cache", str(tmp_path / "c")])
    out = capsys.readouterr().out
    assert code == 0 and (tmp_path / "f" / "consensus_vs_K.png").exists()
    lines = [line for line in out.splitlines() if "loglog slope" in line]
    # overall and last-3-points fits, for stationarity and consensus
    assert len(lines) == 4 and "3 replicas" in lines[0]
    slope = float(lines[0].split("loglog slope ")[1].split()[0])
    assert -1.0 < slope < 0.0  # the stationarity average decreases with K
