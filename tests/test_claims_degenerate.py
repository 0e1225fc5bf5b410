"""No check raises: every claim's check returns a verdict on degenerate data.

The data come from a tiny real run of every experiment (n = 4, three K, three replicas), then
Hypothesis spoils them as a user's setting can: NaN or inf in a series, zero or negative values,
every replica alike, S2 = inf, gamma L > 1 at every K, runs that diverged, a single K point.
Every check must return ``pass``, ``fail`` or ``inconclusive`` with its text fields, never raise.
"""

import copy
import dataclasses
import math

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from sgpverify import suite

VERDICTS = ("pass", "fail", "inconclusive", "not applicable")

TINY = dict(
    n=4,
    d=3,
    Ks=(32, 64, 128),
    rate_replicas=3,
    replicas=3,
    speedup_replicas=3,
    speedup_ns=(2, 4),
    speedup_Ks=(32, 64, 128),
    descent_Ks=(32, 64),
    taus=(0, 1),
    delay_Ks=(32, 64, 128),
    delay_replicas=3,
    baseline_Ks=(32, 64, 128),
    compare_topologies=("ring-bidir",),
    topology_Ks=(32, 64, 128),
    topology_replicas=3,
    scaling_Ks=(32, 64, 128),
    scaling_replicas=3,
    complexity_ns=(2, 4),
    complexity_budgets=(128, 256, 512),
    complexity_replicas=3,
    theorem_K_cap=2000,
    theorem_replicas=3,
    mixing_horizon=40,
    bound_horizon=40,
)
SINGLE = dict(
    Ks=(64,),
    speedup_Ks=(64,),
    descent_Ks=(64,),
    delay_Ks=(64,),
    baseline_Ks=(64,),
    topology_Ks=(64,),
    scaling_Ks=(64,),
    complexity_budgets=(256,),
    speedup_ns=(4,),
    complexity_ns=(4,),
)


def _run(over):
    cfg = suite.validate_config(suite.config_from_dict(TINY))
    cfg = dataclasses.replace(cfg, **{k: tuple(v) for k, v in over.items()})  # past validation on purpose
    return cfg, suite.run_experiments(cfg, 0, tuple(suite.EXPERIMENTS))


@pytest.fixture(scope="module")
def tiny():
    return _run({})


def _assert_verdicts(cfg, data):
    for claim in suite.CLAIMS:
        res = suite.evaluate(claim, cfg, data)
        assert res["verdict"] in VERDICTS, (claim.name, res)
        for key in ("measured", "predicted", "detail"):
            assert isinstance(res[key], str), (claim.name, key, res)


def _numeric_paths(obj, path=()):
    """Paths to every measured number (a float) inside the nested dicts and lists of the data; the
    integers are identities (K, n, tau, budgets) the experiments set, not measurements."""
    if isinstance(obj, dict):
        for k, v in obj.items():
            yield from _numeric_paths(v, path + (k,))
    elif isinstance(obj, list):
        for i, v in enumerate(obj):
            yield from _numeric_paths(v, path + (i,))
    elif isinstance(obj, float):
        yield path


def _set(obj, path, value):
    for p in path[:-1]:
        obj = obj[p]
    obj[path[-1]] = value


BAD = [math.nan, math.inf, -math.inf, 0.0, -1.0, 1e308, 5e-324]


@settings(max_examples=60, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(st.data())
def test_no_check_raises_on_spoiled_numbers(tiny, data):
    cfg, clean = tiny
    spoiled = copy.deepcopy(clean)
    paths = sorted(_numeric_paths(spoiled), key=repr)
    for path in data.draw(st.lists(st.sampled_from(paths), min_size=1, max_size=12)):
        _set(spoiled, path, data.draw(st.sampled_from(BAD)))
    _assert_verdicts(cfg, spoiled)


def _runs(data):
    for key in suite.claims.conservation.RECORDED:
        if key in data and "error" not in data[key]:
            yield from suite.EXPERIMENTS[key].runs(data[key])


@pytest.mark.parametrize(
    "spoil",
    ["nan-series", "constant-series", "zero-series", "gamma-L-above-1", "S2-inf", "all-diverged", "one-diverged"],
)
def test_no_check_raises_on_degenerate_settings(tiny, spoil):
    cfg, clean = tiny
    data = copy.deepcopy(clean)
    if spoil == "all-diverged":
        data = {k: {"error": "simulation diverged at iteration 7"} for k in data}
    elif spoil == "one-diverged":
        data["rates"] = {"error": "simulation diverged at iteration 7"}
    elif spoil == "S2-inf":
        for sch in data["mixing"]["schedules"].values():
            sch["S2"] = math.inf
        for p in data["delays"]["products"].values():
            p["S2"] = math.inf
        for sch in data["topologies"]["schedules"].values():
            sch["S2"] = math.inf
    else:
        for r in _runs(data):
            if spoil == "nan-series":
                r["stationarity"] = [math.nan] * len(r["stationarity"])
                r["consensus"] = [math.nan] * len(r["consensus"])
                if "lhs" in r:  # the descent runs carry the stationarity as the inequality's left side
                    r["lhs"] = r["stationarity"]
            elif spoil == "constant-series":
                r["stationarity"] = [0.5] * len(r["stationarity"])
                r["consensus"] = [0.25] * len(r["consensus"])
            elif spoil == "zero-series":
                r["stationarity"] = [0.0] * len(r["stationarity"])
                r["consensus"] = [0.0] * len(r["consensus"])
            elif spoil == "gamma-L-above-1":
                r["gamma"] = 100.0
                if "gamma_L" in r:
                    r["gamma_L"] = 150.0
        if spoil == "nan-series" and data.get("worstcase", {}).get("entries"):
            for e in data["worstcase"]["entries"]:  # the worst-case check's run
                e["measured"] = math.nan
    _assert_verdicts(cfg, data)
    if spoil == "nan-series":  # NaN settles nothing: no check that reads the series passes on it
        for claim in suite.CLAIMS:
            if claim.name not in (
                "mass-conservation",
                "mixing-constants",
                "consensus-bound",
                "delay-consensus",
                "declared-constants",
            ):
                assert suite.evaluate(claim, cfg, data)["verdict"] != "pass", claim.name


def test_a_check_that_raises_is_an_internal_error_naming_it(tiny):
    # a real bug (not degenerate data) is not turned into a verdict: it is raised, naming the check
    cfg, data = tiny
    broken = dataclasses.replace(suite.BY_NAME["descent-inequality"], check=lambda cfg, data: {}["verdict"])
    with pytest.raises(suite.CheckError, match="check descent-inequality raised KeyError.*experiments: descent"):
        suite.evaluate(broken, cfg, data)


def test_no_check_raises_on_a_single_K_point():
    cfg, data = _run(SINGLE)
    _assert_verdicts(cfg, data)
    for claim in suite.CLAIMS:  # one point settles no limit, rate or ratio
        res = suite.evaluate(claim, cfg, data)
        if claim.name in ("stationarity-rate", "consensus-rate", "delay-rate", "linear-speedup"):
            assert res["verdict"] == "inconclusive", (claim.name, res)


def test_rates_outside_the_step_size_regime_are_inconclusive(tiny):
    # push-sum weights that fall (random peer with delays: to 1e-3) push the effective step gamma / w_min
    # past 1/L: the analysis says nothing there, so the rate claims say inconclusive, not fail
    cfg, clean = tiny
    data = copy.deepcopy(clean)
    L = data["rates"]["constants"]["L"]
    for key in ("rates", "speedup"):
        for sch in data[key]["schedules"].values():
            for r in sch["runs"]:
                r["effective_step"], r["weight_min"] = 50.0 / L, 1e-3
    for r in data["complexity"]["runs"]:
        r["effective_step"] = 50.0 / L
    for name in ("stationarity-rate", "consensus-rate", "linear-speedup", "iteration-complexity"):
        res = suite.evaluate(suite.BY_NAME[name], cfg, data)
        assert res["verdict"] == "inconclusive" and "outside the step-size regime" in res["detail"], (name, res)
    # within the regime the same checks judge the data
    assert (
        "outside the step-size regime" not in suite.evaluate(suite.BY_NAME["stationarity-rate"], cfg, clean)["detail"]
    )


def test_no_nan_is_printed_as_a_measurement():
    from sgpverify.suite.claims.common import fmt
    from sgpverify.suite.records import NOT_MEASURED, Check

    c = Check("x", "inconclusive", "slope nan, ratio -nan [nan, 1.2]", "NaN", "c", "d", "code")
    assert "nan" not in c.measured.lower() and "nan" not in c.predicted.lower()
    assert c.measured == f"slope {NOT_MEASURED}, ratio {NOT_MEASURED} [{NOT_MEASURED}, 1.2]"
    assert Check("x", "pass", "nanoseconds: 3, financial", "-", "c", "d", "k").measured == "nanoseconds: 3, financial"
    assert fmt(float("nan")) == NOT_MEASURED and fmt(0.5) == "0.5" and fmt(float("inf")) == "inf"
