"""Inconclusive verdicts say what would settle them: no NaN as a measurement, the K a regime needs,
a plan with a calibrated time; and a consensus clearly faster than its bound's rate passes."""

import dataclasses
import math

import numpy as np
import pytest

from sgpverify import rates
from sgpverify.suite.claims.common import exponent_result, faster_than_the_bound, undetermined, unless_faster
from sgpverify.suite.hints import SettleHint, settle_hints


def _test(exponent, lo, hi, slopes, verdict="fail", rule="band", predicted=-1.0):
    return rates.ExponentTest(
        exponent=exponent, ci_low=lo, ci_high=hi, stderr=0.01, predicted=predicted, delta=0.1, omega=0.5,
        confidence=0.95, local_slopes=tuple(slopes), local_slopes_se=tuple(0.01 for _ in slopes),
        x_mid=tuple(range(len(slopes))), correction=0.0, gof_pvalue=None, replicas=8, bound_only=False,
        admissible=None, verdict=verdict, rule=rule, reason="measured",
    )  # fmt: skip


def test_an_undetermined_rate_says_what_it_lacks_never_nan():
    why = "outside the step-size regime of the analysis: ... the regime needs K >= 4e+04"
    res = exponent_result({"erdos-renyi(n=16)": undetermined(-0.5, why)}, ["inconclusive"], [why], -0.5)
    assert "nan" not in res["measured"].lower()
    assert res["measured"] == "erdos-renyi not measured: the step-size regime needs K >= 4e+04"


def test_a_consensus_clearly_faster_than_its_bound_passes_marked_so():
    t = unless_faster(_test(-1.17, -1.178, -1.163, [-1.2, -1.18, -1.17]))
    assert t.verdict == "inconclusive" and t.rule == "faster"
    p = faster_than_the_bound(t)
    assert p.verdict == "pass" and p.rule == "faster-than-bound" and "faster than the bound's rate" in p.reason
    # controls: an interval reaching into the band, or a slower decay, is not argued into a pass
    edge = unless_faster(_test(-1.15, -1.2, -1.05, [-1.2, -1.18, -1.15]))
    assert faster_than_the_bound(edge).verdict != "pass"
    slow = _test(-0.6, -0.65, -0.55, [-0.6, -0.6, -0.6])
    assert faster_than_the_bound(unless_faster(slow)).verdict == "fail"


@dataclasses.dataclass
class _Check:
    name: str
    verdict: str
    measured: str
    detail: str = ""
    control: object = None


@dataclasses.dataclass
class _Result:
    config: object
    checks: list
    controls: bool = False
    settle: object = None


def test_hints_plan_the_next_round_and_say_when_nothing_settles():
    from sgpverify.suite import QUICK
    from sgpverify.suite.cost import estimate_seconds

    checks = [
        _Check("stationarity-rate", "inconclusive", "erdos-renyi not measured: the step-size regime needs K >= 4e+04",
               "at K = 256 (n = 16) the effective step ... needs K >= 4e+04"),
        _Check("theorem1-bound", "inconclusive", "outside the theorem's regime: needs K >= 7.2e+05 (erdos-renyi, ...)"),
        _Check("consensus-scaling", "inconclusive", "not applicable to this setting"),
        _Check("topology-ratio", "inconclusive", "ratio limit ring-bidir 3.758"),
        _Check("mass-conservation", "pass", "mass 1e-12"),
    ]  # fmt: skip
    hints = {h.name: h for h in settle_hints(_Result(QUICK, checks), per_step=(1e-5, 1e-6))}
    assert set(hints) == {"stationarity-rate", "theorem1-bound", "consensus-scaling", "topology-ratio"}
    assert hints["stationarity-rate"].config == ("Ks = [65536, 131072, 262144]",)
    assert hints["theorem1-bound"].config == ("theorem_K_cap = 1048576",)
    th = dataclasses.replace(QUICK, theorem_K_cap=1048576)  # costed at its threshold, as settling costs it
    runs = (hints["theorem1-bound"].seconds - 3.0) / (estimate_seconds(th, ["theorem1-bound"], (1e-5, 1e-6)) - 3.0)
    assert 7.2e5 / 1048576 < runs < 1.06 * 7.2e5 / 1048576  # the runs' share: 7.2e5 (+5%) of the cap's steps
    assert hints["consensus-scaling"].command is None and "no compute settles it" in hints["consensus-scaling"].why
    assert hints["topology-ratio"].config == ("topology_Ks = [2048, 4096, 8192, 16384, 32768]",)
    secs = hints["stationarity-rate"].seconds
    sub = dataclasses.replace(QUICK, Ks=(65536, 131072, 262144))
    assert math.isclose(secs, estimate_seconds(sub, ["stationarity-rate"], (1e-5, 1e-6)), rel_tol=1e-12)
    assert math.isclose(secs, 3.0 + sum([65536, 131072, 262144]) * (1e-5 + 1e-6 * 32) * 2, rel_tol=1e-12)
    line = hints["stationarity-rate"].line()
    assert "--only stationarity-rate --settle --budget " in line and "calibrated" in line
    assert isinstance(hints["theorem1-bound"], SettleHint)


def test_hints_cost_the_round_settling_would_run():
    """With controls, a hint costs what settling would run: an inconclusive check whose control is
    detected gets a round without the controls, one whose control is open a round with them, and a
    decided check with a missed control a round for the control alone."""
    from sgpverify.suite import QUICK
    from sgpverify.suite.cost import estimate_seconds
    from sgpverify.suite.settle import evidence_for

    why = "interval width 0.2 > delta = 0.05; more replicas"
    found = {"name": "constant-step", "detected": True}
    missed = {"name": "constant-step", "detected": False, "detail": why}
    per_step = (1e-5, 1e-6)
    wants = []
    for c, controls, only in (
        (_Check("stationarity-rate", "inconclusive", "m", why, found), False, False),
        (_Check("stationarity-rate", "inconclusive", "m", why, missed), True, False),
        (_Check("stationarity-rate", "pass", "m", why, missed), True, True),
    ):
        (h,) = settle_hints(_Result(QUICK, [c], controls=True), per_step=per_step)
        sub = dataclasses.replace(QUICK, **dict(evidence_for(c, QUICK).overrides))
        wants.append(estimate_seconds(sub, [c.name], per_step, controls, controls_only=only))
        assert math.isclose(h.seconds, wants[-1], rel_tol=1e-12), (c, h.seconds, wants[-1])
    assert wants[0] < wants[1]  # running the detected control again would cost more: the test tells them apart


@pytest.mark.parametrize("text", ["nan [nan, nan]"])
def test_the_guides_verify_table_prints_no_nan(text):
    from pathlib import Path

    guide = (Path(__file__).resolve().parent.parent / "docs" / "guide.md").read_text()
    assert text not in guide


def test_a_missed_control_says_what_would_detect_it_and_an_excused_one_does_not():
    from sgpverify.suite import QUICK

    missed = {"name": "shared-noise", "verdict": "inconclusive", "detected": False,
              "measured": "ratio limit ring-bidir 5.453", "detail": "larger x would settle it"}  # fmt: skip
    excused = dict(missed, undetectable="the bound is 1e3 times above the measurement here")
    checks = [
        _Check("topology-ratio", "pass", "ratio limit ring-bidir 1.001", control=missed),
        _Check("consensus-bound", "pass", "max ratio 0.001", control=excused),
        _Check("peers", "pass", "stationarity ratio limit 1.000", control=dict(missed, detected=True, verdict="fail")),
    ]
    hints = settle_hints(_Result(QUICK, checks, controls=True), per_step=(1e-5, 1e-6))
    assert [h.name for h in hints] == ["topology-ratio, its control shared-noise"]
    (h,) = hints
    assert "--only topology-ratio --controls --settle --budget " in h.line() and h.seconds > 0
    # the control's round keeps the ladder's start and goes two doublings further
    assert h.config == ("topology_Ks = [512, 1024, 2048, 4096, 8192, 16384, 32768]",)


def test_a_time_estimate_reads_in_the_unit_of_its_size():
    """An unreachable round (Theorem 1's threshold at K = 1.5e14) printed "2863893.9 h"; estimates
    read in seconds, minutes, hours, days or years, with no more digits than an estimate has."""
    from sgpverify.suite.cost import duration

    assert duration(42.4) == "42 s"
    assert duration(600) == "10 min"
    assert duration(3 * 3600) == "3.0 h"
    assert duration(47 * 3600) == "47.0 h"
    assert duration(12 * 86400) == "12 days"
    assert duration(2863893.9 * 3600) == "327 years"
    assert duration(1e12 * 3.15576e7) == "1.0e+12 years"


def test_an_extrapolation_carried_just_below_the_band_from_a_last_slope_in_it_is_never_a_failure():
    """Found on an honest Welsch-loss problem (64 rows a node, one a step) on the bidirectional ring:
    consensus local slopes -0.946, -0.993, -1.014, -1.022, extrapolated to -1.070 [-1.087, -1.054],
    carried 0.048 < delta past the last slope, failed. O(1/K) bounds the rate from above: a fast-side
    result is no failure; for the consensus, whose whole interval lies below the band with the last
    local slope in it, a pass marked so; for the stationarity (an exact rate), inconclusive."""
    x = np.sqrt(np.array([512, 1024, 2048, 4096], float) * np.array([1024, 2048, 4096, 8192], float))
    S = np.array([-0.946, -0.993, -1.014, -1.022]) + 0.03 * np.random.default_rng(3).standard_normal((64, 4))
    raw = rates.test_limit(x, S, predicted=-1.0, correction=0.5, decay=True)
    assert raw.verdict == "fail" and raw.rule == "extrapolation"  # the case as it was judged before
    assert raw.ci_high < -1.05 and -1.05 <= raw.local_slopes[-1] <= -0.95
    t = unless_faster(raw)
    assert t.verdict == "inconclusive" and t.rule == "faster"
    p = faster_than_the_bound(t)
    assert p.verdict == "pass" and p.rule == "faster-than-bound" and "at the bound's rate K^-1 or faster" in p.reason
    # the same shape for an exact rate (stationarity, -1/2): inconclusive, not a failure
    half = rates.test_limit(x, S + 0.5, predicted=-0.5, correction=0.5, decay=True)
    assert half.verdict == "fail" and unless_faster(half).verdict == "inconclusive"
    # controls: slow-side evidence keeps the failure, and a fast-side growth with the extrapolation in
    # the band is inconclusive, not a pass
    mixed = _test(-1.2, -1.22, -1.18, [-1.0, -0.9, -0.85])  # _test's band: -1 +- 0.1
    assert unless_faster(mixed) is mixed
    grown = unless_faster(_test(-1.0, -1.02, -0.98, [-1.0, -1.1, -1.15], rule="growth"))
    assert grown.verdict == "inconclusive" and faster_than_the_bound(grown).verdict == "inconclusive"
    decay = _test(-1.2, -1.22, -1.18, [-1.2, -1.2, -1.2], rule="decay")
    assert unless_faster(decay) is decay
