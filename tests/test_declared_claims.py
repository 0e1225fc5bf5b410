"""Claims declared by a user (sgpverify.declare, verify --claims) go through the suite's own path."""

import json
import math

import numpy as np
import pytest

import sgpverify as sv
from sgpverify import declare, suite
from sgpverify.cli import main

LADDER = declare.Ladder(Ks=(128, 256, 512, 1024), n=8, replicas=8, topology="exponential-irregular")
CONTROL = declare.Control("no-debias", "push-sum without de-biasing", debias=False)

FILE = """
from sgpverify import declare
CLAIMS = [declare.Claim(
    name="file-consensus", statement="consensus O(1/K)", metric="consensus",
    prediction=declare.exponent("K", -1.0),
    ladder=declare.Ladder(Ks=(128, 256, 512, 1024), n=8, replicas=8, topology="exponential-irregular"),
    control=declare.Control("no-debias", "push-sum without de-biasing", debias=False),
)]
"""


def _claim(name="t-consensus", prediction=None, **kw):
    return declare.Claim(
        name=name,
        statement="consensus average O(1/K)",
        metric=kw.pop("metric", "consensus"),
        prediction=prediction or declare.exponent("K", -1.0),
        ladder=kw.pop("ladder", LADDER),
        control=kw.pop("control", CONTROL),
        **kw,
    )


@pytest.fixture
def registered():
    got = []

    def reg(c):
        c.register()
        got.append(c)
        return c

    yield reg
    for c in got:
        c.unregister()
    assert all(c.name not in suite.BY_NAME for c in got)


def _run(name):
    res = suite.run_suite(suite.QUICK, seed=0, controls=True, only=[name])
    (chk,) = res.checks
    return res, chk


def test_declared_exponent_passes_and_control_detected(registered):
    registered(_claim())
    res, chk = _run("t-consensus")
    assert chk.verdict == "pass", chk.detail
    assert chk.control["detected"], chk.control
    assert res.status == 0


def test_declared_false_exponent_fails(registered):
    registered(_claim("t-wrong", prediction=declare.exponent("K", -0.5)))
    _, chk = _run("t-wrong")
    assert chk.verdict == "fail", chk.detail


def test_declared_bound(registered):
    # the consensus average is about 4 gamma^2 here: <= 20 gamma^2 holds, <= 2 gamma^2 is false
    registered(_claim("t-bound-ok", prediction=declare.bound("gamma**2 * 20")))
    registered(_claim("t-bound-false", prediction=declare.bound("gamma**2 * 2")))
    res = suite.run_suite(suite.QUICK, seed=0, only=["t-bound-ok", "t-bound-false"])
    got = {c.name: c.verdict for c in res.checks}
    assert got == {"t-bound-ok": "pass", "t-bound-false": "fail"}, [c.detail for c in res.checks]


def test_measured_equals_hand_computed(registered):
    """The metric the suite recorded is the one computed by hand from simulate's trace."""
    registered(_claim())
    res = suite.run_suite(suite.QUICK, seed=0, only=["t-consensus"])
    run = res.data["declared:t-consensus"]["runs"][1]
    K = run["K"]
    prob = sv.problems.QuadraticCosine(n=8, d=suite.QUICK.d, alpha=0.5, heterogeneity=1.0, sigma=1.0, seed=0)
    tr = sv.simulate(
        prob,
        sv.graphs.irregular_exponential(8, seed=0),
        step_size=math.sqrt(8 / K),
        n_iter=K,
        x0=np.zeros(suite.QUICK.d),
        replicas=8,
        seed=0,
    )
    hand = np.asarray(tr.consensus).reshape(K + 1, 8)[:K].mean(axis=0)
    np.testing.assert_allclose(run["values"], hand, rtol=64 * np.finfo(float).eps * K)


@pytest.mark.parametrize(
    "kw, match",
    [
        (dict(metric="stationarityy"), "metric must be one of"),
        (dict(prediction=declare.exponent("n", -1.0)), "exponent in_ must be the ladder's axis"),
        (dict(method="sgd"), "method must be one of"),
    ],
)
def test_declaration_errors(kw, match):
    with pytest.raises(ValueError, match=match):
        _claim(**kw)


def test_name_clash_with_builtin():
    with pytest.raises(ValueError, match="'consensus-rate' clashes with a check of the suite"):
        _claim("consensus-rate").register()
    assert suite.BY_NAME["consensus-rate"].experiments == ("rates", "mixing")


def test_cli_claims(tmp_path, capsys):
    f = tmp_path / "mine.py"
    f.write_text(FILE)
    out = tmp_path / "o"
    try:
        rc = main(
            [
                "verify",
                "--quick",
                "--claims",
                str(f),
                "--only",
                "file-consensus",
                "--controls",
                "--no-cache",
                "--workers",
                "1",
                "--out",
                str(out),
                "--no-progress",
                "--json",
            ]
        )
        d = json.loads(capsys.readouterr().out)
    finally:
        suite.claims.unregister("file-consensus", "declared:file-consensus")
    assert rc == 0
    (c,) = d["checks"]
    assert (c["name"], c["verdict"], c["control"]["detected"]) == ("file-consensus", "pass", True)
    assert c["code"].startswith(str(f))


@pytest.mark.parametrize(
    "text, match",
    [
        ("X = 1\n", "must define CLAIMS"),
        ("import nosuchmodule_xyz\n", "could not be loaded: ModuleNotFoundError"),
        (FILE.replace("file-consensus", "consensus-rate"), "clashes with a check of the suite"),
        (FILE.replace('"consensus"', '"consensu"'), "metric must be one of"),
    ],
)
def test_cli_bad_file_exits_2(tmp_path, capsys, text, match):
    f = tmp_path / "bad.py"
    f.write_text(text)
    rc = main(["verify", "--quick", "--claims", str(f), "--no-cache", "--out", str(tmp_path / "o")])
    err = capsys.readouterr().err
    assert rc == 2 and match in err and str(f) in err
    assert not (tmp_path / "o").exists()


def test_cli_only_unknown_exits_2(tmp_path, capsys):
    rc = main(["verify", "--quick", "--only", "nope", "--no-cache", "--out", str(tmp_path / "o")])
    assert rc == 2 and "--only must name a check" in capsys.readouterr().err


# ---------------------------------------------------------------- noise-free claims

EXACT = dict(Ks=(512, 1024, 2048, 4096), n=16, topology="exponential-irregular", replicas=3, step=0.05)
EXACT_SETTING = {"sigma": 0.0, "x0": 1.0, "d": 4}
ROUND_OFF = declare.vanishes("K * (n*eps)**2 * (G0 + zeta2)")


def _exact_claim(name, method="push-diging", prediction=ROUND_OFF, metric="final_stationarity", **ladder):
    return declare.Claim(
        name=name,
        statement="exact gradients, constant step: ||grad f(xbar^K)||^2 -> 0 to round-off",
        method=method,
        metric=metric,
        prediction=prediction,
        ladder=declare.Ladder(**{**EXACT, "setting": EXACT_SETTING, **ladder}),
        control=declare.Control("sgp", "SGP, same step", method="sgp"),
    )


@pytest.mark.slow
def test_vanishes_passes_for_tracking_and_its_control_sgp_fails(registered):
    """Push-DIGing reaches round-off (the built-in test_methods criterion, 1e-20, is looser than the
    tolerance here: K (n eps)^2 (G0 + zeta2) ~ 1e-25); SGP at the same step stalls at a floor ~ 1e-6."""
    registered(_exact_claim("t-exact"))
    res, chk = _run("t-exact")
    assert chk.verdict == "pass", chk.detail
    assert chk.extra["final"] <= 1e-20 and chk.extra["tolerance"] <= 1e-20
    assert chk.control["detected"], chk.control
    registered(_exact_claim("t-exact-sgp", method="sgp"))
    _, chk = _run("t-exact-sgp")
    assert chk.verdict == "fail" and chk.extra["stalled"], chk.detail


def test_vanishes_too_short_a_ladder_is_inconclusive(registered):
    """Still falling, above the tolerance at the largest K: no verdict but 'longer ladder'."""
    registered(_exact_claim("t-exact-short", Ks=(256, 512, 1024)))
    _, chk = _run("t-exact-short")
    assert chk.verdict == "inconclusive" and "still falling" in chk.detail, chk.detail


def test_exponent_of_identical_replicas_is_refused(registered):
    """Exact gradients: every replica is the same computation; the exponent test is not run (a zero-width
    interval would weigh the extrapolation's model error against no spread)."""
    registered(_exact_claim("t-exact-exponent", prediction=declare.exponent("K", -1.0), metric="stationarity"))
    _, chk = _run("t-exact-exponent")
    assert chk.verdict == "inconclusive", chk.detail
    assert "agree to round-off" in chk.detail and chk.extra.get("deterministic"), chk.detail


def test_deterministic_threshold():
    from sgpverify.declared_checks import DETERMINISTIC_SPREAD, deterministic

    base = np.array([[1.0, 1e-28, 3.0]] * 4)
    assert deterministic(base)
    near = base.copy()
    near[0] *= 1 + DETERMINISTIC_SPREAD / 2  # a last-bits difference
    assert deterministic(near)
    noisy = base.copy()
    noisy[0, 1] *= 1 + 1e-6  # one point differs by far more than round-off
    assert not deterministic(noisy)


@pytest.mark.parametrize(
    "make, match",
    [
        (lambda: declare.vanishes("K * eps", stall=1.0), "vanishes stall must be a number in"),
        (lambda: declare.vanishes("K *"), "bound expr must be a sympy expression"),
        (lambda: declare.exponent("K", -1.0, omega=()), "exponent omega must be a number > 0 or a non-empty"),
        (lambda: declare.exponent("K", -1.0, omega=(1.0, -2.0)), "exponent omega must be > 0"),
        (
            lambda: _exact_claim("t-v", Ks=1024, params={"H": (1, 2)}),
            "vanishes\\(...\\) is a limit in K: the ladder must vary Ks, got axis 'H'",
        ),
    ],
)
def test_vanishes_and_omega_errors(make, match):
    with pytest.raises(ValueError, match=match):
        make()


def test_exponent_omega_tuple_reaches_the_test():
    """An omega tuple is the test's model x^-1 + x^-2: a polynomial law is extrapolated exactly."""
    from sgpverify.declared_checks import exponent_check

    H = np.array([1.0, 2, 4, 8, 16, 32])
    rng = np.random.default_rng(0)
    Y = (3 * H**2 + 2 * H + 1) * np.exp(0.01 * rng.standard_normal((8, H.size)))
    runs = [{"x": h, "values": list(Y[:, j])} for j, h in enumerate(H)]
    got = exponent_check(declare.exponent("H", 2.0, band=0.1, omega=(1.0, 2.0)), runs, "m")
    assert got["verdict"] == "pass", got["detail"]
    assert got["extra"]["test"]["omega"] == [1.0, 2.0], got["extra"]["test"]


def test_a_declared_bound_far_above_the_measurement_has_an_undetectable_control(registered):
    # the consensus average is about 4 gamma^2: a bound of 2e4 gamma^2 sits 5000 times above it, and the
    # no-debias departure stays under it; the suite's rule for its own bound checks applies alike
    c = registered(_claim("t-bound-loose", prediction=declare.bound("gamma**2 * 20000")))
    assert suite.BY_NAME[c.name].bound
    res, chk = _run("t-bound-loose")
    assert chk.verdict == "pass" and chk.extra["slack"] < 1e-2, chk.detail
    assert chk.control["verdict"] == "pass" and not chk.control["detected"], chk.control
    assert "undetectable" in chk.control and chk.control["slack"] < 1e-2
    assert res.status == 0 and "undetectable by its bound here: t-bound-loose" in sv.report.summary_line(res)
