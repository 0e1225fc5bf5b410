"""Push-DIGing's built-in claims (verify --method push-diging), declared on the user's path."""

import dataclasses
import json
import runpy

import numpy as np
import pytest

from sgpverify import declare, method_claims, suite
from sgpverify.cli import main
from sgpverify.engine.methods.push_diging import PushDIGing, mix

NAMES = ("push-diging-exact-stationarity", "push-diging-zeta-free", "push-diging-consensus-rate")


@pytest.fixture
def unload():
    """Leave the suite as it was: the method's claims registered by a test are removed after it."""
    yield
    method_claims.unload("push-diging")
    assert not set(NAMES) & set(suite.CHECK_NAMES)


def _declared():
    """The claims file's CLAIMS, fresh (not registered)."""
    return {c.name: c for c in runpy.run_path(method_claims.path("push-diging"))["CLAIMS"]}


class NoCorrection(PushDIGing):
    """Push-DIGing with the tracking correction dropped: y^{k+1} = g(z^{k+1}), the local gradient."""

    name = "push-diging-no-correction"

    def step(self, k, P, state, gamma, grad):
        u, y, v = state.vectors["x"], state.vectors["y"], state.scalars["w"]
        n = state.n
        state.applied += y.sum(axis=0)
        u_new = mix(P, u - gamma * y)
        v_new = mix(P, v)
        z = u_new[:n] * (1.0 / v_new[:n])[:, :, None]
        g = np.asarray(grad(z), dtype=float)
        y_new = mix(P, y)
        y_new[:n] = g  # the bug: no C^k y^k + g^{k+1} - g^k
        state.vectors["x"], state.vectors["y"], state.scalars["w"] = u_new, y_new, v_new
        state.grads = g


# ---------------------------------------------------------------- errors, before any work


def test_unknown_method_exits_2_naming_it_before_any_work(tmp_path, capsys):
    out = tmp_path / "o"
    rc = main(["verify", "--quick", "--method", "push-dig", "--no-cache", "--out", str(out)])
    err = capsys.readouterr().err
    assert rc == 2 and "--method" in err and "'push-dig'" in err, err
    assert not out.exists()


@pytest.mark.parametrize("bad", ["push-dig", "sgp", 3])
def test_unknown_method_python_api(bad):
    with pytest.raises(ValueError, match=f"method must be one of push-diging, got {bad!r}"):
        suite.verify(method=bad, only=["mixing-constants"])
    assert not set(NAMES) & set(suite.CHECK_NAMES)


def test_the_claims_run_only_when_asked_for():
    assert not set(NAMES) & set(suite.CHECK_NAMES)
    assert list(_declared()) == list(NAMES)


# ---------------------------------------------------------------- the three claims


@pytest.mark.parametrize("name", NAMES)
def test_each_claim_passes_and_its_control_is_detected(name, unload):
    res = suite.verify(method="push-diging", only=[name], controls=True)
    (chk,) = res.checks
    assert chk.name == name
    assert chk.verdict == "pass", chk.detail
    assert chk.control["verdict"] == "fail" and chk.control["detected"], chk.control
    assert chk.code.startswith(method_claims.path("push-diging"))
    if name == "push-diging-zeta-free":
        # it measures what it says: Push-DIGing's floor is the same at both heterogeneities; SGP's (the
        # control) grows like zeta2 (exponent 2 in the heterogeneity, whose square zeta2 is)
        assert abs(chk.extra["exponent"]) < 0.01, chk.detail
        sgp = float(chk.control["measured"].split()[1])
        assert 1.8 < sgp < 2.2, chk.control


@pytest.mark.parametrize("name", NAMES[:2])
def test_the_claims_catch_tracking_without_its_correction(name):
    # the claim's method with the tracking correction dropped is no longer Push-DIGing: it must fail
    c = dataclasses.replace(_declared()[name], name=name + "-broken", method=NoCorrection())
    c.register()
    try:
        (chk,) = suite.run_suite(suite.QUICK, seed=0, only=[c.name]).checks
    finally:
        c.unregister()
    assert chk.verdict == "fail", chk.detail


def test_the_heterogeneity_ladder_scales_zeta2():
    c = _declared()["push-diging-zeta-free"]
    ladder = dataclasses.replace(c.ladder, Ks=16, replicas=3)
    got = dataclasses.replace(c, ladder=ladder).run(suite.QUICK, 0)
    z = [r["constants"]["zeta2"] for r in got["runs"]]
    assert [r["x"] for r in got["runs"]] == [1.0, 4.0]
    assert z[1] == pytest.approx(16 * z[0], rel=1e-12)
    assert ladder.config_params() == ("heterogeneity",)


def test_a_ladder_parameter_is_not_also_a_setting():
    with pytest.raises(ValueError, match="'sigma' is both a parameter and a setting"):
        declare.Ladder(Ks=16, params={"sigma": (0.1, 1.0)}, setting={"sigma": 0.0})


# ---------------------------------------------------------------- the CLI


def test_cli_method_flag(tmp_path, capsys, unload):
    out = tmp_path / "o"
    argv = ["verify", "--quick", "--method", "push-diging", "--only", NAMES[0], "--only", NAMES[1]]
    rc = main(argv + ["--controls", "--no-cache", "--workers", "1", "--out", str(out), "--no-progress", "--json"])
    d = json.loads(capsys.readouterr().out)
    assert rc == 0
    got = {c["name"]: (c["verdict"], c["control"]["detected"]) for c in d["checks"]}
    assert got == {NAMES[0]: ("pass", True), NAMES[1]: ("pass", True)}


def test_cli_only_names_a_method_claim_without_the_flag(tmp_path, capsys):
    rc = main(["verify", "--quick", "--only", NAMES[1], "--no-cache", "--out", str(tmp_path / "o")])
    assert rc == 2 and "--only must name a check" in capsys.readouterr().err
