"""Controls of bound checks under a loose bound: "undetectable here", said with both ratios, counted apart
from the missed ones, never settled; and only for bound checks, only past LOOSE_BOUND, only on a pass."""

import math
import sys
from pathlib import Path

import pytest

from sgpverify import suite
from sgpverify.report import summary_line
from sgpverify.suite import QUICK, Check, SuiteResult
from sgpverify.suite.claims import BY_NAME
from sgpverify.suite.criteria import LOOSE_BOUND
from sgpverify.suite.records import control_ok, control_record, exit_status, undetectable
from sgpverify.suite.settle import needs_settling

EXAMPLES = Path(__file__).resolve().parents[1] / "docs" / "examples"


def _check(name, verdict="pass", slack=1e-3, control=None):
    return Check(name, verdict, "m", "p", "c", "d", "x.py:1", extra={"slack": slack}, control=control)


def _ctl(verdict="pass", slack=2e-3):
    return {"verdict": verdict, "measured": f"max ratio {slack}", "extra": {"slack": slack}}


BOUND, OTHER = BY_NAME["consensus-bound"], BY_NAME["stationarity-rate"]


def test_the_bound_checks_are_marked_and_the_others_are_not():
    marked = {c.name for c in suite.CLAIMS if c.bound}
    assert marked == {"theorem1-bound", "descent-inequality", "consensus-bound", "combined-bound", "delay-consensus"}


def test_undetectable_only_for_a_passing_bound_check_past_the_threshold_whose_control_passes():
    why = undetectable(BOUND, _check(BOUND.name, slack=1e-3), _ctl(slack=3.6e-3))
    assert why is not None and "1e+03 times above" in why and "0.0036 of the bound" in why
    # the threshold: just under it, undetectable; at it, a miss
    assert undetectable(BOUND, _check(BOUND.name, slack=LOOSE_BOUND * 0.99), _ctl(slack=0.5)) is not None
    assert undetectable(BOUND, _check(BOUND.name, slack=LOOSE_BOUND), _ctl(slack=0.5)) is None
    assert undetectable(OTHER, _check(OTHER.name, slack=1e-3), _ctl()) is None  # not a bound check
    assert undetectable(BOUND, _check(BOUND.name, "fail", slack=1e-3), _ctl()) is None  # the check itself failed
    assert undetectable(BOUND, _check(BOUND.name, slack=1e-3), _ctl("inconclusive")) is None
    assert undetectable(BOUND, _check(BOUND.name, slack=1e-3), _ctl("fail", slack=2.0)) is None  # detected
    for bad in (math.nan, math.inf, 0.0, -1.0, None):  # no ratio measured: no excuse
        assert undetectable(BOUND, _check(BOUND.name, slack=bad), _ctl()) is None
        assert undetectable(BOUND, _check(BOUND.name), _ctl(slack=bad)) is None


def test_an_undetectable_control_is_neither_missed_nor_settled_and_the_summary_says_why():
    rec = control_record(BOUND, _check(BOUND.name), {**_ctl(), "verdict": "pass"})
    assert rec["detected"] is False and "undetectable" in rec
    loose = _check(BOUND.name, control=rec)
    missed = _check("stationarity-rate", control=control_record(OTHER, _check(OTHER.name), _ctl()))
    assert control_ok(loose) and not needs_settling(loose)
    assert not control_ok(missed) and needs_settling(missed)
    res = SuiteResult(config=QUICK, seed=0, checks=(loose,), data={}, seconds=1.0, controls=True)
    assert exit_status(res) == 0
    line = summary_line(res)
    assert "controls detected 0/0" in line and "undetectable by its bound here: consensus-bound" in line
    res = SuiteResult(config=QUICK, seed=0, checks=(loose, missed), data={}, seconds=1.0, controls=True)
    assert exit_status(res) == 1 and "NOT: stationarity-rate" in summary_line(res)


# 10 s; test_an_undetectable_control_is_neither_missed_nor_settled_and_the_summary_says_why holds the rule
@pytest.mark.slow
def test_the_guides_setting_gets_undetectable_bound_controls_and_no_round_for_them(monkeypatch):
    monkeypatch.syspath_prepend(str(EXAMPLES))
    sys.modules.pop("mymod", None)
    kw = dict(nodes=16, edge_prob=0.3, controls=True, Ks=(128, 256), rate_replicas=4)
    res = suite.verify("mymod:make", "erdos-renyi", only=["consensus-bound", "combined-bound"], **kw)
    for c in res.checks:
        assert c.verdict == "pass" and c.extra["slack"] < LOOSE_BOUND, (c.name, c.measured)
        assert c.control["verdict"] == "pass" and "undetectable" in c.control, c.control
    assert res.status == 0
    settled = suite.verify(
        "mymod:make", "erdos-renyi", only=["consensus-bound"], settle=True, budget=1, **kw
    )  # nothing to settle: no round
    assert settled.settle["checks"] == {} and settled.checks[0].control == res.checks[0].control


@pytest.mark.slow  # tests/test_suite.py::test_default_quick_suite_passes_and_every_control_is_detected holds it for all
@pytest.mark.parametrize("name", ["consensus-bound", "combined-bound", "descent-inequality"])
def test_on_the_defaults_the_bound_controls_are_detected_not_excused(name):
    res = suite.verify(only=[name], controls=True)  # the quick preset's ladders: the bounds sit within 100x
    (c,) = res.checks
    assert c.verdict == "pass" and c.control["detected"] and "undetectable" not in c.control, c.control


def test_a_round_never_excuses_a_control_the_planned_run_missed():
    from sgpverify.suite.settle import _merge

    missed = {"name": "no-debias", "verdict": "pass", "detected": False, "measured": "m", "detail": "d"}
    excused = dict(missed, undetectable="the bound is 500 times above the measurement here ...")
    # the planned run judged the check (pass, a bound 20x loose) and missed its control: still a miss
    old = _check(BOUND.name, "pass", slack=0.05, control=missed)
    got = _merge(old, _check(BOUND.name, "pass", slack=2e-3, control=excused), 1, 1, "why", ())
    assert "undetectable" not in got.control and not control_ok(got)
    # the planned run could not judge the check (inconclusive): the round is its first judgement
    old = _check(BOUND.name, "inconclusive", slack=None, control=dict(missed, verdict="inconclusive"))
    got = _merge(old, _check(BOUND.name, "pass", slack=2e-3, control=excused), 1, 1, "why", ())
    assert got.verdict == "pass" and "undetectable" in got.control and control_ok(got)


def test_no_debias_departs_from_nothing_only_where_every_weight_stays_one():
    from sgpverify.suite.departures import NONE, Variant, vacuous

    nodebias = Variant(name="no-debias", debias=False)
    flat = {"rates": {"schedules": {"h": {"runs": [{"K": 512, "n": 16, "weight_min": 1.0, "weight_max": 1.0}] * 3}}}}
    why = vacuous(nodebias, flat)
    assert why is not None and "3 runs stays 1" in why
    assert vacuous(NONE, flat) is None and vacuous(Variant(name="b", bias=1.0), flat) is None
    moved = {
        "rates": {
            "runs": [{"K": 512, "n": 16, "weight_min": 1.0, "weight_max": 1.0}, {"weight_min": 0.98, "weight_max": 1.0}]
        }
    }
    assert vacuous(nodebias, moved) is None  # one schedule whose weights move: the departure acts there
    for bad in (math.nan, None, 1.0 + 1e-6):
        assert vacuous(nodebias, {"r": {"runs": [{"K": 8, "n": 4, "weight_min": bad, "weight_max": 1.0}]}}) is None
    assert vacuous(nodebias, {"r": {"runs": []}}) is None and vacuous(nodebias, {"r": {"error": "x"}}) is None


@pytest.mark.slow  # 6 s; test_no_debias_departs_from_nothing_only_where_every_weight_stays_one holds the rule
def test_on_the_hypercube_the_no_debias_controls_depart_from_nothing(monkeypatch):
    monkeypatch.syspath_prepend(str(EXAMPLES))
    sys.modules.pop("mymod", None)
    res = suite.verify("mymod:make", "hypercube", nodes=16, controls=True, only=["consensus-bound"], Ks=(256, 512))
    (c,) = res.checks
    assert c.verdict == "pass" and not c.control["detected"] and "stays 1" in c.control["vacuous"], c.control
    assert control_ok(c) and not needs_settling(c) and res.status == 0
    assert "departs from nothing here: consensus-bound" in summary_line(res)
    # where the weights move (Erdos-Renyi), the same departure acts, and nothing is excused that way
    res = suite.verify("mymod:make", "erdos-renyi", nodes=16, edge_prob=0.3, controls=True, only=["consensus-bound"])
    assert "vacuous" not in res.checks[0].control


def test_a_departure_that_does_not_lift_the_measurement_is_undetectable_by_any_bound_that_holds():
    """Past LOOSE_BOUND, a control whose measured/bound ratio is no larger than the honest runs' is
    undetectable (the bound holds for the honest runs, so for these too); one that lifts it at all is a
    miss, whatever the margin."""
    s = 0.0558  # Theorem 1's slack on docs/examples/sigmoid.py; its biased-gradient control: 0.0329
    why = undetectable(BOUND, _check(BOUND.name, slack=s), _ctl(slack=0.0329))
    assert why is not None and "does not lift" in why and "0.0329" in why and "0.0558" in why
    assert undetectable(BOUND, _check(BOUND.name, slack=s), _ctl(slack=s)) is not None  # equal: not lifted
    assert undetectable(BOUND, _check(BOUND.name, slack=s), _ctl(slack=s * 1.001)) is None  # lifted: a miss
    assert undetectable(OTHER, _check(OTHER.name, slack=s), _ctl(slack=0.01)) is None  # not a bound check
    assert undetectable(BOUND, _check(BOUND.name, slack=s), _ctl("inconclusive", slack=0.01)) is None
    rec = control_record(BOUND, _check(BOUND.name, slack=s), _ctl(slack=0.0329))
    assert "undetectable" in rec and not rec["detected"]
    assert not needs_settling(_check(BOUND.name, slack=s, control=rec))
