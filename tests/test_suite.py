"""The verification suite: the quick preset with every negative control runs in
the default test run; the full preset under the slow marker.

What must hold on the default configuration (fixed before the run, never tuned
to it): every check passes, and every check fails on its control. Each check
is also held against a hand computation of its statistic from the raw data."""

import json
import math
import pathlib
import sys

import numpy as np
import pytest
from _tolerances import roundoff

from sgpverify import rates, suite, theory
from sgpverify.cli import main
from sgpverify.report import format_table, write_report

#: The CLI's default unit cache in the checkout. CI runs the main job (`sgpverify verify --quick
#: --controls`, from the checkout) before the tests, so the fixture below loads the units that run
#: computed instead of computing them a second time (about 150 CPU-seconds). A unit's key holds the
#: configuration, seed, variant, the hash of every sgpverify source file and the library versions
#: (tests/test_sweep.py), so a cached unit has the bits a fresh run would give; with no cache (a
#: fresh checkout, or after `rm -r .sgpverify-cache`) the fixture computes everything.
CACHE = pathlib.Path(__file__).resolve().parents[1] / ".sgpverify-cache"


@pytest.fixture(scope="module")
def quick():
    return suite.run_suite(suite.QUICK, seed=0, controls=True, workers=2, cache=CACHE)  # same bits as serial


def test_default_quick_suite_passes_and_every_control_is_detected(quick):
    by = {c.name: c for c in quick.checks}
    assert list(by) == list(suite.CHECK_NAMES)
    bad = {n: (c.verdict, c.measured, c.detail) for n, c in by.items() if c.verdict != "pass"}
    assert not bad
    missed = {n: c.control for n, c in by.items() if not c.control["detected"]}
    assert not missed
    assert quick.status == 0
    json.dumps(quick.to_dict())


def test_rate_verdicts_follow_from_the_raw_data(quick):
    """Recompute the exponent test of each rate check from data.json-style raw results."""
    by = {c.name: c for c in quick.checks}
    for name, key, pred in (("stationarity-rate", "stationarity", -0.5), ("consensus-rate", "consensus", -1.0)):
        for label, sch in quick.data["rates"]["schedules"].items():
            runs = sch["runs"]
            Y = np.array([r[key] for r in runs]).T
            assert Y.shape == (suite.QUICK.rate_replicas, len(suite.QUICK.Ks))
            t = rates.test_exponent(
                [r["K"] for r in runs], Y, predicted=pred, delta=suite.RATE_DELTA, omega=suite.RATE_OMEGA
            )
            got = by[name].extra["per_schedule"][label]
            assert got["exponent"] == pytest.approx(t.exponent, rel=1e-12)
            assert got["verdict"] == t.verdict
            # the local slopes are those of the raw averages over doublings
            ls = np.diff(np.log(Y), axis=1).mean(axis=0) / math.log(2)
            np.testing.assert_allclose(got["local_slopes"], ls, rtol=1e-10)


def test_default_setting_exercises_push_sum_and_nonconvexity(quick):
    sch = quick.data["rates"]["schedules"]
    assert set(sch) == {"exponential", "exponential-irregular"}
    irr = sch["exponential-irregular"]["runs"]
    # weights move (de-biasing matters) but stay away from zero
    assert min(r["weight_min"] for r in irr) < 0.7 and max(r["weight_max"] for r in irr) > 1.4
    assert min(r["weight_min"] for r in irr) > 0.3
    exp = sch["exponential"]["runs"]
    assert all(r["weight_min"] == r["weight_max"] == 1.0 for r in exp)  # 1/2 w + 1/2 w: exact
    # at least 10% of the visited points have an indefinite Hessian, at every K
    assert all(r["indefinite_fraction"] >= 0.10 for r in exp + irr)


def test_theorem_check_uses_true_f_star_and_reports_the_regime(quick):
    th = quick.data["theorem"]["schedules"]
    const = quick.data["theorem"]["constants"]
    # a number written down on one machine: f* = f(x*) sums d = 10 coordinate terms and an n d-term
    # constant (x* is a root to brentq's tolerance, which moves f only to second order at the minimum)
    assert const["f_star"] == pytest.approx(6.78494850808047, abs=roundoff(1 + 6.8, suite.QUICK.n * 10))
    assert th["exponential"]["run"] is not None
    assert th["exponential"]["run"]["K"] >= th["exponential"]["threshold"]
    assert th["exponential-irregular"]["run"] is None  # outside the regime: said, never passed
    c = {c.name: c for c in quick.checks}["theorem1-bound"]
    assert "outside the theorem's regime" in c.detail and "slack factor" in c.detail
    r = th["exponential"]["run"]
    bound = theory.evaluate(
        theory.PUBLISHED_BOUND,
        Delta=np.mean(r["f0"]) - const["f_star"],
        L=const["L"],
        sigma2=const["sigma2"],
        n=suite.QUICK.n,
        K=r["K"],
    )
    assert c.extra["slack"] == pytest.approx(np.mean(r["stationarity"]) / bound, rel=1e-12)


def _best_envelope(dev, q_low):
    """(C, q) minimising C / (1 - q) with q >= q_low and C q^(t-1) >= dev[t-1] above round-off:
    a grid search, independent of check_mixing's envelope."""
    t = np.arange(len(dev), dtype=float)
    keep = dev > suite.ENVELOPE_FLOOR
    qs = np.linspace(max(q_low, 1e-6), 0.999999, 4000)
    Cs = np.exp(np.max(np.log(dev[keep])[None, :] - t[keep][None, :] * np.log(qs)[:, None], axis=1))
    i = int(np.argmin(Cs / (1 - qs)))
    return float(Cs[i]), float(qs[i])


def test_envelope_is_valid_and_minimises_the_threshold(quick):
    mx = quick.data["mixing"]["schedules"]["exponential-irregular"]
    dev = np.asarray(mx["dev_inf"])
    C, q = _best_envelope(dev, mx["q_exact_dense"])
    t = np.arange(dev.size)
    above = dev > suite.ENVELOPE_FLOOR
    assert np.all(dev[above] <= C * q ** t[above] * (1 + 1e-12))
    assert q >= mx["q_exact_dense"] - 1e-12
    # no valid pair on a coarse grid does better
    for qq in np.linspace(mx["q_exact_dense"] + 1e-6, 0.99, 50):
        CC = np.max(dev[above] / qq ** t[above])
        assert CC / (1 - qq) >= C / (1 - q) * (1 - 1e-6)
    # two independent computations: dense products here, check_mixing's deviation series there
    assert mx["q_exact_dense"] == pytest.approx(mx["q_exact"], abs=1e-9)
    assert C / (1 - q) == pytest.approx(mx["C"] / (1 - mx["q"]), rel=2e-3)


@pytest.mark.needs_matplotlib
def test_json_and_table(quick, tmp_path):
    d = quick.to_dict()
    for c in d["checks"]:
        assert {"name", "verdict", "measured", "predicted", "criterion", "code", "control"} <= set(c)
        assert c["verdict"] in suite.CHECK_VERDICTS
        assert {"name", "verdict", "detected"} <= set(c["control"])
        if c["name"].endswith("-rate") or c["name"] == "linear-speedup":
            assert {"exponent", "interval", "local_slopes"} <= set(c)
    t = format_table(quick.checks)
    assert t.splitlines()[0].split() == ["check", "verdict", "control", "measured"]
    assert all(c.name in t for c in quick.checks)
    for width in (80, 100, 140):  # the CLI's range starts at 80
        assert max(map(len, format_table(quick.checks, width=width).splitlines())) <= width
    assert max(map(len, format_table(quick.checks, width=200).splitlines())) > 100  # nothing clipped at 200
    with pytest.raises(ValueError, match="width must be at least 40 characters, got 10"):
        format_table(quick.checks, width=10)
    rep = write_report(quick, tmp_path / "rep")
    text = rep.read_text()
    for c in quick.checks:
        assert c.name in text and c.code.split(" ")[0] in text
    assert "detected" in text


def test_report_failure_leaves_nothing_behind(quick, tmp_path, monkeypatch):
    from sgpverify import plots

    def boom(*a, **k):
        raise RuntimeError("disk full")

    monkeypatch.setattr(plots, "render_all", boom)
    with pytest.raises(RuntimeError):
        write_report(quick, tmp_path / "rep")
    assert list(tmp_path.iterdir()) == []


@pytest.mark.parametrize(
    "verdicts, controls, status",
    [
        (("pass", "pass"), (True, True), 0),
        (("pass", "inconclusive"), (True, True), 4),
        (("fail", "inconclusive"), (True, True), 1),
        (("pass", "pass"), (True, False), 1),
    ],
)
def test_exit_status(verdicts, controls, status):
    checks = tuple(
        suite.Check(f"c{i}", v, "", "", "", "", "", control={"detected": d, "verdict": "fail"})
        for i, (v, d) in enumerate(zip(verdicts, controls))
    )
    res = suite.SuiteResult(config=suite.QUICK, seed=0, checks=checks, data={}, seconds=0.0, controls=True)
    assert suite.exit_status(res) == status


@pytest.mark.needs_matplotlib
def test_cli_verify_json_exit_code_and_controls(quick, tmp_path, monkeypatch, capsys):
    seen = {}

    def fake(cfg, seed=0, progress=None, controls=False, only=None, workers=1, **executor):
        seen.update(cfg=cfg, controls=controls, only=only)
        return quick

    monkeypatch.setattr(suite, "run_suite", fake)
    code = main(["verify", "--quick", "--controls", "--out", str(tmp_path / "o"), "--json", "--no-progress"])
    out = json.loads(capsys.readouterr().out)
    assert code == 0 and out["status"] == "pass" and seen["controls"] is True
    assert [c["name"] for c in out["checks"]] == list(suite.CHECK_NAMES)
    assert all(c["control"]["detected"] for c in out["checks"])


def test_cli_verify_setting_options(quick, tmp_path, monkeypatch, capsys):
    seen = {}
    monkeypatch.setattr(suite, "run_suite", lambda cfg, **kw: seen.setdefault("cfg", cfg) and quick)
    conf = tmp_path / "s.toml"
    conf.write_text("replicas = 4\nKs = [128, 256, 512]\n")
    main(
        [
            "verify",
            "--quick",
            "--topology",
            "erdos-renyi",
            "--nodes",
            "12",
            "--edge-prob",
            "0.3",
            "--tau",
            "2",
            "--delay",
            "random",
            "--problem",
            "double-well",
            "--dim",
            "3",
            "--config",
            str(conf),
            "--out",
            str(tmp_path / "o"),
            "--no-progress",
        ]
    )
    cfg = seen["cfg"]
    assert (cfg.topologies, cfg.n, cfg.edge_prob, cfg.tau, cfg.delay, cfg.problem, cfg.d) == (
        ("erdos-renyi",),
        12,
        0.3,
        2,
        "random",
        "double-well",
        3,
    )
    assert cfg.replicas == 4 and cfg.Ks == (128, 256, 512)


#: The shipped example (docs/examples/mymod.py) plus broken factories for the error paths.
EXAMPLE = pathlib.Path(__file__).resolve().parents[1] / "docs" / "examples" / "mymod.py"
BROKEN_FACTORIES = """

def nan_L(n, d, seed):
    p = Cauchy(n, d, seed)
    p.L = float("nan")
    return p


def no_grad(n, d, seed):
    class P:
        n_nodes, dim, L, sigma2, zeta2, f_lower = n, d, 1.0, 0.0, 0.0, 0.0
    return P()


not_callable = 3
"""


@pytest.fixture
def user_module(tmp_path, monkeypatch):
    (tmp_path / "mymod_sgpv.py").write_text(EXAMPLE.read_text() + BROKEN_FACTORIES)
    monkeypatch.chdir(tmp_path)
    monkeypatch.syspath_prepend(str(tmp_path))
    yield "mymod_sgpv"
    sys.modules.pop("mymod_sgpv", None)


@pytest.mark.needs_matplotlib
def test_verify_on_a_problem_written_outside_the_package(user_module, tmp_path, capsys):
    code = main(
        [
            "verify",
            "--quick",
            "--topology",
            "erdos-renyi",
            "--nodes",
            "16",
            "--edge-prob",
            "0.3",
            "--problem",
            f"{user_module}:make",
            "--only",
            "mixing-constants",
            "--only",
            "descent-inequality",
            "--json",
            "--no-progress",
            "--out",
            str(tmp_path / "o"),
        ]
    )
    out = json.loads(capsys.readouterr().out)
    assert code in (0, 1, 4)
    by = {c["name"]: c for c in out["checks"]}
    assert set(by) == {"mixing-constants", "descent-inequality"}
    assert by["mixing-constants"]["verdict"] == "pass"
    assert out["config"]["problem"] == f"{user_module}:make"


@pytest.mark.parametrize(
    "spec, message",
    [
        ("nosuchmod_xyz:make", "could not be imported"),
        ("{m}:missing", "has no attribute 'missing'"),
        ("{m}:not_callable", "must name a callable"),
        ("{m}:no_grad", "missing attribute 'grad'"),
        ("{m}:nan_L", "L must be a finite positive number, got nan"),
        ("quadratic", "problem must be one of"),
    ],
)
def test_verify_bad_problem_is_one_line_exit_2(user_module, tmp_path, capsys, spec, message):
    code = main(
        ["verify", "--quick", "--problem", spec.format(m=user_module), "--no-progress", "--out", str(tmp_path / "o")]
    )
    err = capsys.readouterr().err
    assert code == 2 and message in err and len(err.strip().splitlines()) == 1
    assert not (tmp_path / "o").exists()  # nothing half-written


@pytest.mark.parametrize(
    "argv, message",
    [
        (["--out", "FILE"], "--out must be a directory"),
        (["--seed", "-1"], "seed must be an integer >= 0, got -1"),
        (["--nodes", "1"], "nodes must be an integer >= 2, got 1"),
        (["--tau", "-2"], "tau must be an integer >= 0, got -2"),
        (["--edge-prob", "1.5", "--topology", "erdos-renyi"], "--edge-prob must be a number in (0.0, 1.0], got 1.5"),
        (["--config", "CONF"], "did you mean 'replicas'"),
        (["--topology", "moebius"], "invalid choice"),
    ],
)
def test_cli_verify_bad_input(tmp_path, capsys, argv, message):
    f = tmp_path / "file"
    f.write_text("x")
    conf = tmp_path / "c.toml"
    conf.write_text("replicaz = 3\n")
    argv = [str(f) if a == "FILE" else str(conf) if a == "CONF" else a for a in argv]
    assert main(["verify", "--quick", "--no-progress", "--out", str(tmp_path / "o")] + argv) == 2
    err = capsys.readouterr().err
    assert message in err and len(err.strip().splitlines()) == 1


def test_diverging_setting_is_inconclusive_not_a_crash(tmp_path):
    # curvature 40 with gamma = sqrt(n/K) = 0.5: every run blows up (a setting outside the step regime)
    from sgpverify import problems

    def stiff(n, d, seed):
        return problems.QuadraticCosine(n, d, alpha=0.0, a_min=20.0, a_max=40.0, seed=seed)

    res = suite.verify(
        problem=stiff,
        topology="ring-bidir",
        preset="quick",
        only=["stationarity-rate"],
        Ks=(64, 128, 256),
        rate_replicas=3,
        x0=1.0,
    )
    c = res.checks[0]
    assert c.verdict == "inconclusive" and "diverged" in c.detail and res.status == 4


def test_python_api_verify_matches_run_suite():
    a = suite.verify(topology="ring-bidir", only=["mixing-constants"])
    b = suite.run_suite(suite.config_from_dict({"topologies": ("ring-bidir",)}), only=["mixing-constants"])
    assert [c.to_dict() for c in a.checks] == [c.to_dict() for c in b.checks]


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


@pytest.mark.needs_matplotlib
def test_cli_run_prints_exponent_tests(tmp_path, capsys):
    cfg = tmp_path / "r.toml"
    cfg.write_text(
        'experiment = "rates"\nseed = 2\nfigures = ["consensus_vs_K"]\n'
        "[config]\nn = 4\nd = 3\nKs = [64, 128, 256, 512]\nrate_replicas = 4\ntopologies = ['ring']\n"
    )
    code = main(["run", str(cfg), "--out", str(tmp_path / "f"), "--cache", str(tmp_path / "c")])
    out = capsys.readouterr().out
    assert code == 0 and (tmp_path / "f" / "consensus_vs_K.png").exists()
    lines = [line for line in out.splitlines() if line.startswith("  ") and "exponent" in line]
    assert len(lines) == 2 and "stationarity" in lines[0] and "local slopes" in lines[0]


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
    topology_Ks=(64, 128, 256),
    topology_replicas=4,
    scaling_Ks=(64, 128, 256),
    scaling_replicas=4,
    complexity_ns=(2, 4),
    complexity_budgets=(64, 128, 256),
    complexity_replicas=4,
)


@pytest.mark.slow  # the whole suite twice; tests/test_sweep.py holds workers = 2 against serial bits on a subset
def test_workers_give_the_same_bits_as_serial():
    cfg = suite.config_from_dict(SMALL)
    a = suite.run_suite(cfg, seed=3, controls=True, workers=1)
    b = suite.run_suite(cfg, seed=3, controls=True, workers=2)
    assert json.dumps(a.to_dict()["checks"]) == json.dumps(b.to_dict()["checks"])
    assert json.dumps(a.data, sort_keys=True, default=str) == json.dumps(b.data, sort_keys=True, default=str)


@pytest.mark.slow
def test_full_suite():
    res = suite.run_suite(suite.FULL, seed=0)
    assert all(c.verdict != "fail" for c in res.checks), [(c.name, c.verdict, c.measured) for c in res.checks]


def test_new_claims_follow_from_the_raw_data(quick):
    """delay-rate, delay-consensus, consensus-scaling and peers recomputed from the raw runs."""
    by = {c.name: c for c in quick.checks}
    cfg = suite.QUICK
    d = quick.data["delays"]
    get = {(r["K"], r["tau"]): r for r in d["runs"]}
    assert sorted({r["K"] for r in d["runs"]}) == sorted(set(cfg.Ks) | set(cfg.delay_Ks))
    worst = None
    for tau in (1, 2, 4):
        Y = np.array([get[K, tau]["stationarity"] for K in cfg.Ks]).T
        t = rates.test_exponent(list(cfg.Ks), Y, predicted=-0.5, delta=suite.RATE_DELTA, omega=suite.RATE_OMEGA)
        got = by["delay-rate"].extra["per_schedule"][f"tau={tau}"]
        assert got["exponent"] == pytest.approx(t.exponent, rel=1e-12) and got["verdict"] == t.verdict
    for tau in cfg.taus:
        S2 = d["products"][str(tau)]["S2"]
        for K in sorted({r["K"] for r in d["runs"]}):
            r = get[K, tau]
            ratio = r["consensus_w2_max"] / (r["gamma"] * S2) ** 2 / r["G2sq"]
            worst = ratio if worst is None else max(worst, ratio)
            # delta_k = min_i w_i^k <= 1 (the real weights sum to at most n): E Xi^k delta_k^2 <= max_k E Xi^k
            assert r["consensus_w2_max"] <= r["consensus_max"] * (1 + 1e-12)
    assert by["delay-consensus"].extra["slack"] == pytest.approx(worst, rel=1e-9)
    sc = quick.data["scaling"]["settings"]
    j = np.log(
        np.array([r["consensus"] for r in sc["both"]["runs"]]) / np.array([r["consensus"] for r in sc["base"]["runs"]])
    ).T
    t = rates.test_limit(
        np.asarray(cfg.scaling_Ks, float), j, predicted=math.log(4), delta=suite.RATE_DELTA, omega=suite.RATIO_OMEGAS
    )
    assert by["consensus-scaling"].extra["joint"]["exponent"] == pytest.approx(t.exponent, rel=1e-12)
    # the scaled problems declare the scaled constants
    assert sc["both"]["sigma2"] == pytest.approx(4 * sc["base"]["sigma2"])
    assert sc["both"]["zeta2"] == pytest.approx(4 * sc["base"]["zeta2"])
    tp = quick.data["topologies"]["schedules"]
    assert set(tp) == {"exponential", "exponential, 2 peers", "ring-bidir", "erdos-renyi"}
    assert by["peers"].extra["S2"] == [tp["exponential"]["S2"], tp["exponential, 2 peers"]["S2"]]


def _inner_problem(inner):
    from sgpverify import problems

    return (
        problems.QuadraticCosine(6, 5, sigma=0.7, seed=1)
        if inner == "quadcos"
        else problems.NonconvexLogistic(6, 5, seed=1)
    )


def _assert_stacked_gradients_are_per_replica_gradients(prob, seed, R=4):
    """One grad_replicas call gives, replica by replica, grad's bits and leaves each generator where
    grad leaves it; and the engine takes the stacked call."""
    from sgpverify import problems

    assert problems.replica_grads(prob) is not None
    Z = np.random.default_rng(seed).standard_normal((R, 6, 5))
    mine = [np.random.default_rng(s) for s in range(R)]
    theirs = [np.random.default_rng(s) for s in range(R)]
    out = np.full_like(Z, np.nan)
    assert prob.grad_replicas(Z, mine, out) is out
    for r in range(R):
        assert np.array_equal(out[r].view(np.uint64), prob.grad(Z[r], theirs[r]).view(np.uint64)), r
        assert mine[r].random() == theirs[r].random(), r


@pytest.mark.parametrize(
    "variant",
    [
        dict(extra_noise=99.0),
        dict(shared_noise=True),
        dict(bias=0.5),
        dict(extra_noise=3.0, shared_noise=True, bias=0.25),
    ],
    ids=["extra-noise", "shared-noise", "bias", "all-three"],
)
@pytest.mark.parametrize("inner", ["quadcos", "logistic"])
def test_perturbed_problem_stacked_gradients_are_its_per_replica_gradients(variant, inner):
    # the controls' problem: one stacked call (inner grad_replicas, then each replica's departures
    # from its own stream) gives grad's bits and draws; without an inner grad_replicas, per replica
    from sgpverify import problems

    base = _inner_problem(inner)
    assert (problems.replica_grads(base) is not None) == (inner == "quadcos")
    _assert_stacked_gradients_are_per_replica_gradients(suite.Perturbed(base, suite.Variant(**variant)), 3)


@pytest.mark.parametrize("s_h, s_n", [(1, 1), (2, 1), (1, 2), (2, 2), (0.5, 3)])
@pytest.mark.parametrize("inner", ["quadcos", "logistic"])
def test_scaled_problem_stacked_gradients_are_its_per_replica_gradients(s_h, s_n, inner):
    _assert_stacked_gradients_are_per_replica_gradients(suite.Scaled(_inner_problem(inner), s_h, s_n), 5)


def test_catalogue_verdicts_are_those_of_a_fresh_run(quick):
    """docs/verdicts.json (the latest default verdicts the claims catalogue shows) holds the
    verdicts and control detections of the default run: refresh it when they change
    (``python docs/_ext/claims_catalogue.py sgpverify-out/checks.json``)."""
    path = pathlib.Path(__file__).resolve().parent.parent / "docs" / "verdicts.json"
    latest = json.loads(path.read_text(encoding="utf-8"))
    assert latest["run"]["preset"] == "quick" and latest["run"]["seed"] == 0
    fresh = {c.name: (c.verdict, c.control["name"], c.control["detected"]) for c in quick.checks}
    shown = {n: (v["verdict"], v["control"]["name"], v["control"]["detected"]) for n, v in latest["checks"].items()}
    assert shown == fresh
