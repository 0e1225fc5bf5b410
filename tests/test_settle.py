"""verify --settle: the evidence each round brings, the budget, the error spending across rounds, fresh
noise per round, verdicts before and after, and that settling never re-judges a decisive verdict."""

import dataclasses
import math

import numpy as np
import pytest
from test_claims_degenerate import tiny  # noqa: F401  (the module-scoped run of every experiment)

from sgpverify import suite
from sgpverify.report import settle_summary
from sgpverify.suite import QUICK, Check, SuiteResult
from sgpverify.suite.claims.common import regime_by_n
from sgpverify.suite.cost import control_mains, estimate_seconds
from sgpverify.suite.criteria import level, spending
from sgpverify.suite.settle import (
    MARGIN,
    MAX_ROUNDS,
    REGIME_POINTS,
    evidence_for,
    needs_settling,
    settle,
)


def _check(name, verdict="inconclusive", measured="", detail="", control=None):
    return Check(name, verdict, measured, "-", "criterion", detail, "x.py:1", control=control)


def _result(checks, cfg=QUICK, controls=False):
    return SuiteResult(config=cfg, seed=0, checks=tuple(checks), data={}, seconds=0.0, controls=controls)


def test_level_is_the_criteria_level_outside_settling_and_spends_inside():
    # outside settling level() returns its argument itself (no arithmetic): exact by construction
    assert level() == 0.95 and level(0.99) == 0.99
    with spending(0.5):
        assert math.isclose(level(), 0.975, rel_tol=0, abs_tol=1e-15)
        with spending(0.125):
            assert math.isclose(level(), 1 - 0.05 / 8, rel_tol=0, abs_tol=1e-15)
        assert math.isclose(level(), 0.975, rel_tol=0, abs_tol=1e-15)
    assert level() == 0.95  # the share restored: the argument itself again
    for bad in (0.0, 1.5, -1.0, float("nan")):
        with pytest.raises(ValueError, match="share must be in"), spending(bad):
            pass


def test_a_regime_starts_the_ladder_where_the_check_says():
    c = _check(
        "stationarity-rate",
        measured="erdos-renyi not measured: the step-size regime needs K >= 4e+04",
        detail="erdos-renyi: outside the step-size regime of the analysis: at K = 256 (n = 16) the effective step "
        "... the regime needs K >= 4e+04",
    )
    ev = evidence_for(c, QUICK)
    ((field, ladder),) = ev.overrides
    assert field == "Ks" and len(ladder) == REGIME_POINTS
    assert ladder[0] >= 4e4 and ladder[0] / 2 < 4e4  # the first power-of-two multiple of 256 past 4e4
    assert ladder == tuple(k * (ladder[0] // 256) for k in QUICK.Ks[:REGIME_POINTS])
    th = evidence_for(_check("theorem1-bound", measured="outside the theorem's regime: needs K >= 7.2e+05"), QUICK)
    assert th.overrides == (("theorem_K_cap", 1048576),)
    # the flagged run is not the ladder's first: the ladder still starts at or past K (not at a multiple of
    # the flagged K)
    c = _check("consensus-rate", detail="outside the step-size regime: at K = 2048 (n = 16) ... needs K >= 3.4e+03")
    ((_, ladder),) = evidence_for(c, QUICK).overrides
    assert ladder[0] >= 3.4e3 and ladder[0] / 2 < 3.4e3


def test_a_later_round_reads_the_latest_verdict_not_the_tag_of_the_round_before():
    # round 1 went to the step-size regime; its verdict says the slopes are still pre-asymptotic, and the
    # tag it carries repeats round 1's reason: round 2 must extend the ladder, not go to the regime again
    # (which, the ladder already past it, would only double it and cut it to its first points)
    cfg = dataclasses.replace(QUICK, complexity_budgets=(8192, 16384, 32768))
    tagged = (
        "ring-bidir ...: pre-asymptotic in K: ... a longer ladder in K would settle it [settled in round 1 (noise "
        "stream 1; the step-size regime needs K >= 6.8e+02: the ladder starts there (3 points); complexity_budgets "
        "= (8192, 16384, 32768))]"
    )
    ev = evidence_for(_check("iteration-complexity", detail=tagged), cfg)
    assert ev.overrides == (("complexity_budgets", (32768, 65536, 131072)),) and "still moving" in ev.why
    # a regime the latest run itself reports is still read
    own = "... the regime needs K >= 5e+05" + tagged[tagged.index(" [settled") :]
    ((_, ladder),) = evidence_for(_check("iteration-complexity", detail=own), cfg).overrides
    assert ladder[0] >= 5e5


def test_the_complexity_budgets_go_to_the_regime_of_their_largest_n():
    # budgets T = n K: at the largest n a run has T / n iterations; the regime's K is reached when that
    # does (the ladder was doubled at every round while n = 32 stayed at K = T / 32 < the regime)
    cfg = dataclasses.replace(QUICK, complexity_budgets=(8192, 16384, 32768), complexity_ns=(4, 8, 16, 32))
    c = _check("iteration-complexity", detail="n = 32 outside the step-size regime ... needs K >= 6.5e+02")
    ((field, ladder),) = evidence_for(c, cfg).overrides
    assert field == "complexity_budgets" and ladder[0] / 32 >= 650 and ladder[0] / 64 < 650


_OUT_AT_4 = (
    "erdos-renyi: outside the step-size regime of the analysis: at K = 32768 (n = 4) the effective step ... "
    "with gamma = sqrt(n/K) the regime needs K >= 65536 ({})"
)


@pytest.mark.parametrize("name, field", [("linear-speedup", "speedup_ns"), ("iteration-complexity", "complexity_ns")])
def test_a_claim_in_n_outside_the_regime_at_its_smallest_n_only_moves_its_n_ladder_up(name, field):
    # sparse random graphs at small n: the weights dip in stretches that grow with the run, so a longer K
    # does not bring n = 4 in, while the larger n are inside already: the n ladder moves up, K kept
    cfg = dataclasses.replace(QUICK, speedup_ns=(4, 8, 16, 32), complexity_ns=(4, 8, 16, 32))
    ev = evidence_for(_check(name, detail=_OUT_AT_4.format(regime_by_n(_runs_out([4]), lambda r: 1.0))), cfg)
    assert ev.overrides == ((field, (8, 16, 32, 64)),), ev
    assert "the n ladder moves up" in ev.why and "its K kept" in ev.why
    two = regime_by_n(_runs_out([4, 8]), lambda r: 1.0)
    assert evidence_for(_check(name, detail=_OUT_AT_4.format(two)), cfg).overrides == ((field, (16, 32, 64, 128)),)
    # not the rule's case: an n outside above one inside, every n outside, one n left inside -> the K ladder
    for out in ([8], [4, 8, 16, 32], [4, 8, 16]):
        ev = evidence_for(_check(name, detail=_OUT_AT_4.format(regime_by_n(_runs_out(out), lambda r: 1.0))), cfg)
        assert [f for f, _ in ev.overrides] != [field] and "the ladder starts there" in ev.why, (out, ev)


def _runs_out(out, ns=(4, 8, 16, 32)):
    """Summaries of a claim in n's runs (L = 1): those at the sizes ``out`` with gamma / w_min = 4 > 2/L,
    the others at 1."""
    return [
        dict(n=n, K=K, gamma=math.sqrt(n / K), weight_min=math.sqrt(n / K) / (4.0 if n in out else 1.0))
        | dict(effective_step=4.0 if n in out else 1.0)
        for n in ns
        for K in (1024, 2048)
    ]


def test_regime_by_n_names_the_sizes_outside_and_inside_in_the_words_settling_reads():
    assert regime_by_n(_runs_out([4]), lambda r: 1.0) == "runs outside the regime at n = 4; in it at n = 8, 16, 32"
    assert regime_by_n(_runs_out([4, 16]), lambda r: 1.0) == "runs outside the regime at n = 4, 16; in it at n = 8, 32"
    assert regime_by_n(_runs_out([4, 8, 16, 32]), lambda r: 1.0) == "runs outside the regime at n = 4, 8, 16, 32"
    assert regime_by_n(_runs_out([]), lambda r: 1.0) == ""
    # the rule of outside_step_regime, run by run: a larger L takes every n out
    assert regime_by_n(_runs_out([4]), lambda r: 4.0) == "runs outside the regime at n = 4, 8, 16, 32"


def test_the_complexity_budgets_go_to_the_regime_of_the_n_the_regime_names():
    # budgets T = n K: where the regime's K is that of a run at n = 4 (K = T / 4), the budgets scale so that
    # n = 4 reaches it, not n = 32 (which would run 8 times further than needed)
    cfg = dataclasses.replace(QUICK, complexity_budgets=(262144, 524288), complexity_ns=(4, 8, 16, 32))
    text = (
        "outside the step-size regime of the analysis: at K = 131072 (n = 4) ... the regime needs K >= 524288 "
        "(runs outside the regime at n = 4, 32; in it at n = 8, 16)"
    )
    ((field, ladder),) = evidence_for(_check("iteration-complexity", detail=text), cfg).overrides
    assert field == "complexity_budgets" and ladder[0] // 4 >= 524288 and ladder[0] // 8 < 524288, ladder


def test_each_delay_check_extends_the_ladder_it_reads():
    # delay-robustness reads the ratio ladder delay_Ks, delay-rate the exponent's Ks (same experiment)
    why = "tau = 0 reference runs are outside the step-size regime ... needs K >= 5e+03"
    ((rob_field, rob),) = evidence_for(_check("delay-robustness", detail=why), QUICK).overrides
    ((rate_field, rate),) = evidence_for(_check("delay-rate", detail=why), QUICK).overrides
    assert (rob_field, rate_field) == ("delay_Ks", "Ks")
    assert rob[0] >= 5e3 and rate[0] >= 5e3 and rob[0] / 2 < 5e3 and rate[0] / 2 < 5e3


def test_wide_intervals_get_replicas_and_moving_slopes_a_longer_ladder():
    wide = _check("baselines", detail="exponent 0.077 [0.046, 0.107]: inconclusive (interval width 0.061 > delta "
                  "= 0.05; more replicas or larger x would settle it)")  # fmt: skip
    assert evidence_for(wide, QUICK).overrides == (
        ("baseline_Ks", tuple(2 * k for k in QUICK.baseline_Ks)),
        ("replicas", 2 * QUICK.replicas),
    )
    moving = _check("topology-ratio", detail="the extrapolation carries the last of the estimates ...")
    assert evidence_for(moving, QUICK).overrides == (("topology_Ks", tuple(4 * k for k in QUICK.topology_Ks)),)
    na = _check("consensus-scaling", "not applicable", "not applicable to this setting")
    assert not evidence_for(na, QUICK).runs
    mixing = _check("mixing-constants")
    assert not evidence_for(mixing, QUICK).runs and "no ladder" in evidence_for(mixing, QUICK).why


def test_a_control_round_reads_the_control_and_keeps_the_ladders_start():
    # the check passed in a round that started its ladder at its regime; its constant-step control (gamma =
    # sqrt(n/K_min)) stayed inconclusive: shifting the ladder again would rerun the same picture
    settled = "exponent -0.495 ... [settled in round 1 (...; the step-size regime needs K >= 3.4e+03 ...)]"
    ctl = {
        "name": "constant-step",
        "detected": False,
        "verdict": "inconclusive",
        "measured": "erdos-renyi -0.200 [-0.217, -0.183]",
        "detail": "the extrapolation carries the last of the estimates (-0.46, -0.41) 0.21 > delta = 0.05 out of "
        "the band, where the last estimate lies: the model decides, not the data; larger x would settle it",
    }
    cfg = dataclasses.replace(QUICK, Ks=(4096, 8192, 16384))
    ev = evidence_for(_check("stationarity-rate", "pass", "-0.495", settled, control=ctl), cfg)
    assert ev.overrides == (("Ks", (4096, 8192, 16384, 32768, 65536)),) and "start kept" in ev.why
    # a control whose own runs are outside a regime goes there, as a check does
    ctl = dict(ctl, measured="not measured: the step-size regime needs K >= 5e+04", detail="... needs K >= 5e+04")
    ((_, ladder),) = evidence_for(_check("stationarity-rate", "pass", "-0.495", "", control=ctl), cfg).overrides
    assert ladder[0] >= 5e4 and ladder[0] / 2 < 5e4
    # the check itself, inconclusive, still shifts its ladder (its gamma follows K)
    moving = _check("stationarity-rate", detail="the extrapolation carries ...; larger x would settle it", control=ctl)
    assert evidence_for(moving, cfg).overrides == (("Ks", (16384, 32768, 65536)),)


def test_needs_settling_only_inconclusive_checks_and_missed_controls():
    assert needs_settling(_check("a"))
    assert not needs_settling(_check("a", "pass"))
    assert not needs_settling(_check("a", "fail", control={"detected": True, "verdict": "fail"}))
    assert needs_settling(_check("a", "pass", control={"detected": False, "verdict": "inconclusive"}))
    assert not needs_settling(_check("a", "not applicable", control={"detected": False, "verdict": "x"}))


class _Clock:
    def __init__(self):
        self.t = 0.0

    def __call__(self):
        return self.t


def test_rounds_spend_error_on_fresh_noise_and_stop_at_a_decisive_verdict():
    seen = []
    clock = _Clock()

    def run(cfg, only, controls):
        seen.append((cfg.noise_stream, tuple(only), level(), cfg.rate_replicas))
        clock.t += 10.0
        verdict = "pass" if cfg.rate_replicas >= 2 * 2 * QUICK.rate_replicas else "inconclusive"
        return _result([_check(nm, verdict, "m", "interval width 0.2 > delta = 0.05; more replicas") for nm in only])

    start = [
        _check("stationarity-rate", measured="x", detail="interval width 0.2 > delta = 0.05; more replicas"),
        _check("mass-conservation", "pass", "mass"),
    ]
    checks, rec = settle(_result(start), run, budget=60, per_step=(0.0, 1e-9), clock=clock)
    assert [s[0] for s in seen] == [1, 2]  # a fresh noise stream per round
    assert [s[1] for s in seen] == [("stationarity-rate",)] * 2  # only the check that needs it
    assert [round(1 - s[2], 12) for s in seen] == [0.025, 0.0125]  # alpha 2^-r
    assert [s[3] for s in seen] == [2 * 32, 4 * 32]
    got = {c.name: c for c in checks}
    assert got["stationarity-rate"].verdict == "pass" and "settled in round 2" in got["stationarity-rate"].detail
    assert got["mass-conservation"].verdict == "pass"
    assert rec["checks"]["stationarity-rate"]["before"] == "inconclusive"
    assert rec["checks"]["stationarity-rate"]["after"] == "pass"
    assert "mass-conservation" not in rec["checks"]


def test_at_most_max_rounds_and_never_beyond_the_budget():
    clock = _Clock()
    calls = []

    def run(cfg, only, controls):
        calls.append(cfg)
        clock.t += 1.0
        return _result([_check(nm, "inconclusive", "m", "extrapolation carries") for nm in only])

    start = [_check("topology-ratio", detail="extrapolation carries")]
    checks, rec = settle(_result(start), run, budget=600, per_step=(0.0, 1e-12), clock=clock)
    assert len(calls) == MAX_ROUNDS
    assert "after 3 rounds" in rec["left"]["topology-ratio"]
    assert calls[-1].topology_Ks == tuple(4**MAX_ROUNDS * k for k in QUICK.topology_Ks)
    # what the last round read, and the further run by the same rule, as --config lines a user can run
    assert "its last round read 'm'" in rec["left"]["topology-ratio"]
    further = [4 ** (MAX_ROUNDS + 1) * k for k in QUICK.topology_Ks]
    assert rec["left"]["topology-ratio"].endswith(f"in a --config file: topology_Ks = {further}")
    # a round whose estimate does not fit the budget left is not run, and says what it would need
    calls.clear()
    checks, rec = settle(_result(start), run, budget=0.01, per_step=(1e-3, 1e-3), clock=_Clock())
    assert calls == [] and "beyond the budget left" in rec["left"]["topology-ratio"]
    assert checks[0].verdict == "inconclusive"


def test_a_round_that_fits_only_without_the_margin_is_not_run_and_says_the_margin_is_what_it_lacks():
    calls = []

    def run(cfg, only, controls):
        calls.append(cfg)
        return _result([_check(nm, "inconclusive", "m", "extrapolation carries") for nm in only])

    start = [_check("topology-ratio", detail="extrapolation carries")]
    per_step = (1e-3, 1e-3)
    _, rec = settle(_result(start), run, budget=0.01, per_step=per_step, clock=_Clock())
    need = rec["next"]["topology-ratio"]["seconds"]  # the round's estimate, no slowdown yet
    # a budget between the estimate and the estimate with the margin: not run, and the line says why
    _, rec = settle(_result(start), run, budget=need * (1 + MARGIN) / 2 / 60, per_step=per_step, clock=_Clock())
    assert calls == []
    assert f"with the margin of {MARGIN:g} on estimates, beyond the budget left" in rec["left"]["topology-ratio"]
    # a budget above the estimate with the margin: the round runs
    settle(_result(start), run, budget=need * (MARGIN + 0.1) / 60, per_step=per_step, clock=_Clock())
    assert len(calls) == 1
    # far short of the estimate: no margin to blame
    _, rec = settle(_result(start), run, budget=need / 4 / 60, per_step=per_step, clock=_Clock())
    assert "margin" not in rec["left"]["topology-ratio"] and "beyond the budget left" in rec["left"]["topology-ratio"]


def test_a_control_open_after_max_rounds_says_what_its_last_round_read():
    clock = _Clock()
    ctl = {"name": "shared-noise", "verdict": "inconclusive", "detected": False, "measured": "ctl-m"}
    ctl["detail"] = "extrapolation carries"

    def run(cfg, only, controls, controls_only=False):
        clock.t += 1.0
        return _result([_check(nm, "pass", "m", "d", control=dict(ctl)) for nm in only], controls=controls)

    start = [_check("topology-ratio", "pass", "m", "d", control=dict(ctl))]
    _, rec = settle(_result(start, controls=True), run, budget=600, per_step=(0.0, 1e-12), clock=clock)
    why = rec["left"]["topology-ratio"]
    assert why.startswith("its control still inconclusive after 3 rounds") and "its last round read 'ctl-m'" in why
    assert "topology_Ks = " in why


def test_a_control_whose_check_is_decided_in_its_last_round_gets_rounds_of_its_own():
    """A check decided in its third round, its control still emerging (Welsch loss on the torus: the
    constant-step control at -0.300, local slopes down to -0.470, with 6 minutes of budget left): the
    control gets up to MAX_ROUNDS rounds of its own, for the control alone, and error spending goes on
    at alpha 2^-r for r = 4, 5, ... (the union bound over every round of the check still holds)."""

    def runner(detect_at):
        seen, clock = [], _Clock()

        def run(cfg, only, controls, controls_only=False):
            clock.t += 1.0
            r = len(seen) + 1
            seen.append((r, controls, controls_only, 1 - level()))
            ctl = {"verdict": "inconclusive", "detected": False, "measured": "-0.3", "detail": "slopes moving"}
            if r >= detect_at:
                ctl = {"verdict": "fail", "detected": True, "measured": "-0.2", "detail": "d"}
            verdict = "pass" if r >= 3 else "inconclusive"
            return _result([_check(nm, verdict, "m", "extrapolation carries", control=ctl) for nm in only], True)

        start = [_check("topology-ratio", detail="extrapolation carries", control={"detected": False, "unjudged": 1})]
        cfg = dataclasses.replace(QUICK, topology_Ks=(64, 128, 256))  # six rounds' ladders fit in memory
        checks, rec = settle(_result(start, cfg, True), run, budget=600, per_step=(0.0, 1e-12), clock=clock)
        return seen, checks[0], rec

    seen, got, rec = runner(detect_at=5)
    assert [s[0] for s in seen] == [1, 2, 3, 4, 5]  # the check's three rounds, then two of its control's
    assert [s[2] for s in seen] == [False] * 3 + [True] * 2  # the control's own rounds run the control alone
    assert all(s[1] for s in seen)
    assert [s[3] for s in seen] == pytest.approx([0.05 * 2.0**-r for r in range(1, 6)], rel=1e-12)  # r past 3
    assert got.verdict == "pass" and got.control["detected"] is True
    assert [d["for_control"] for d in rec["checks"]["topology-ratio"]["rounds"]] == [False] * 3 + [True] * 2
    # never detected: three rounds of its own, then it says so and what the next would bring
    seen, got, rec = runner(detect_at=99)
    assert len(seen) == 3 + MAX_ROUNDS and got.control["detected"] is False
    why = rec["left"]["topology-ratio"]
    assert why.startswith(f"its control still inconclusive after {MAX_ROUNDS} rounds of its own") and "'-0.3'" in why


def test_a_decisive_verdict_and_a_detected_control_are_never_rejudged():
    clock = _Clock()
    modes = []

    def run(cfg, only, controls, controls_only=False):
        modes.append((tuple(only), controls, controls_only))
        clock.t += 1.0
        ctl = {"verdict": "pass", "detected": False} if controls else None
        return _result([_check(nm, "fail", "m", "d", control=ctl) for nm in only], controls=controls)

    start = [
        _check(
            "stationarity-rate", "pass", "m", control={"verdict": "inconclusive", "detected": False, "measured": ""}
        ),
        _check("consensus-rate", "inconclusive", "m", "more replicas", control={"verdict": "fail", "detected": True}),
    ]
    checks, rec = settle(_result(start, controls=True), run, budget=10, per_step=(0.0, 1e-12), clock=clock)
    got = {c.name: c for c in checks}
    assert got["stationarity-rate"].verdict == "pass"  # the planned pass stands
    assert got["stationarity-rate"].control["detected"] is False  # its control was settled, to a pass: missed
    assert got["consensus-rate"].verdict == "fail"  # the inconclusive verdict was settled
    assert got["consensus-rate"].control["detected"] is True  # the detected control stands
    # the round of the check the planned run judged comes for its control only; the other's judges the
    # check without its control, detected already (running it again could only be reported, never count)
    assert set(modes) == {(("consensus-rate",), False, False), (("stationarity-rate",), True, True)}
    rounds = rec["checks"]["stationarity-rate"]["rounds"]
    assert rounds and all(r["verdict"] is None and r["control"] == "pass" for r in rounds)
    assert "-> control PASS (the check, decided, not rerun)" in settle_summary(rec)
    (kept,) = rec["checks"]["consensus-rate"]["rounds"]
    assert kept["control"] is None and kept["control_kept"]
    assert "-> FAIL (its control, judged before, kept)" in settle_summary(rec)


def test_a_round_that_shares_its_runs_reports_a_control_judged_before_as_kept():
    """Two checks in one round, one control open and one detected: the controls run (for the open
    one), and the detected one's rerun verdict is neither merged nor reported."""
    clock = _Clock()
    seen = []

    def run(cfg, only, controls, controls_only=False):
        seen.append((tuple(only), controls))
        clock.t += 1.0
        ctl = {"verdict": "pass", "detected": False}
        return _result([_check(nm, "pass", "m", "d", control=ctl) for nm in only], controls=controls)

    why = "interval width 0.2 > delta = 0.05; more replicas"
    start = [
        _check("stationarity-rate", "inconclusive", "m", why, control={"verdict": "fail", "detected": True}),
        _check("consensus-rate", "inconclusive", "m", why, control={"verdict": "pass", "detected": False}),
    ]
    checks, rec = settle(_result(start, controls=True), run, budget=10, per_step=(0.0, 1e-12), clock=clock)
    assert seen[0] == (("stationarity-rate", "consensus-rate"), True)  # one round for both, with the controls
    assert all(s == (("consensus-rate",), True) for s in seen[1:])  # then the open control alone
    got = {c.name: c for c in checks}
    assert got["stationarity-rate"].control["detected"] is True
    (r,) = rec["checks"]["stationarity-rate"]["rounds"]
    assert r["control"] is None and r["control_kept"]
    r = rec["checks"]["consensus-rate"]["rounds"][0]
    assert r["control"] == "pass" and not r["control_kept"]
    assert "stationarity-rate round 1" in settle_summary(rec) and "PASS (its control, judged before, kept)" in (
        settle_summary(rec)
    )


def test_a_round_for_controls_only_leaves_out_the_main_runs_only_the_control_replaces():
    by = {c.name: c for c in suite.CLAIMS}
    assert control_mains([by["stationarity-rate"]]) == {"rates"}  # the constant step's runs replace them whole
    for name in ("consensus-rate", "theorem1-bound", "topology-ratio", "delay-rate", "worst-case"):
        assert control_mains([by[name]]) == set(), name  # no de-biasing, a bound, a completed control
    assert control_mains([by["stationarity-rate"], by["consensus-rate"]]) == set()  # consensus-rate reads rates
    cfg = dataclasses.replace(QUICK, Ks=(64, 128, 256), rate_replicas=4)
    full = suite.run_suite(cfg, only=["stationarity-rate"], controls=True)
    part = suite.run_suite(cfg, only=["stationarity-rate"], controls=True, controls_only=True)
    assert "rates" in full.data and "rates" not in part.data
    assert part.checks[0].verdict == "inconclusive" and part.checks[0].measured == "not rerun"
    assert part.checks[0].control == full.checks[0].control  # the control judged on the same bits
    s = estimate_seconds(cfg, ["stationarity-rate"], (1e-6, 1e-6), controls=True)
    s_only = estimate_seconds(cfg, ["stationarity-rate"], (1e-6, 1e-6), controls=True, controls_only=True)
    assert s_only < s
    with pytest.raises(ValueError, match="controls_only applies with controls=True"):
        suite.run_suite(cfg, only=["stationarity-rate"], controls_only=True)


def test_settle_on_the_suite_resolves_a_short_ladder_and_resumes_from_the_cache(tmp_path):
    kw = dict(only=["consensus-rate"], Ks=(64, 128, 256), rate_replicas=4, settle=True, budget=3)
    msgs = []
    res = suite.verify(**kw, cache=tmp_path, progress=msgs.append)
    rounds = res.settle["checks"]["consensus-rate"]["rounds"]
    assert res.settle["checks"]["consensus-rate"]["before"] == "inconclusive"
    assert rounds and all(r["noise_stream"] == i + 1 for i, r in enumerate(rounds))
    assert res.checks[0].verdict == res.settle["checks"]["consensus-rate"]["after"]
    assert any(m.startswith("settle round 1") for m in msgs)
    again = []
    res2 = suite.verify(**kw, cache=tmp_path, progress=again.append)
    assert [c.to_dict() for c in res2.checks] == [c.to_dict() for c in res.checks]
    ran = [m for m in again if not m.startswith("settle") and not m.endswith(": cached")]
    assert ran == []  # every unit of the planned run and of every round came from the cache


def test_settle_on_decisive_checks_runs_nothing_more():
    msgs = []
    res = suite.verify(only=["mixing-constants"], settle=True, progress=msgs.append, mixing_horizon=50)
    assert res.checks[0].verdict == "pass"
    assert res.settle["checks"] == {} and not any(m.startswith("settle") for m in msgs)
    assert res.settle["per_step"] is None  # not even a calibration


def test_budget_needs_settle_and_a_positive_number():
    with pytest.raises(ValueError, match="budget applies with settle=True"):
        suite.verify(only=["mixing-constants"], budget=5)
    for bad in (0, -1, float("nan"), float("inf")):
        with pytest.raises(ValueError, match="budget"):
            suite.verify(only=["mixing-constants"], settle=True, budget=bad)
    for bad in ("5", True):
        with pytest.raises(TypeError, match="budget"):
            suite.verify(only=["mixing-constants"], settle=True, budget=bad)
    with pytest.raises(TypeError, match="settle must be True or False, got 'yes'"):
        suite.verify(only=["mixing-constants"], settle="yes")


def test_a_noise_stream_changes_the_noise_and_nothing_else():
    from sgpverify.suite.runs import run_one
    from sgpverify.suite.setting import resolve_problem, setting_schedules

    cfg = dataclasses.replace(QUICK, n=4, d=3)
    prob = resolve_problem(cfg.problem, cfg)(4, 0)
    topo = setting_schedules(cfg)[0][1](4, 0)
    a = run_one(cfg, prob, topo, 32, 0, replicas=3)
    b = run_one(dataclasses.replace(cfg, noise_stream=1), prob, topo, 32, 0, replicas=3)
    c = run_one(dataclasses.replace(cfg, noise_stream=1), prob, topo, 32, 0, replicas=3)
    assert a["f0"] == b["f0"]  # the same problem and start
    assert a["stationarity"] != b["stationarity"]  # other noise
    assert b["stationarity"] == c["stationarity"]  # the same stream, the same bits
    assert np.all(np.isfinite(b["stationarity"]))


def _cli(argv):
    import io

    from sgpverify.cli import main

    out, err = io.StringIO(), io.StringIO()
    return main(argv, out=out, err=err), out.getvalue(), err.getvalue()


@pytest.mark.parametrize(
    "argv, words",
    [
        (["--budget", "5"], "--budget applies with --settle, got --budget 5 alone"),
        (["--settle", "--budget", "0"], "--budget"),
        (["--settle", "--budget", "nan"], "--budget"),
        (["--settle", "--budget", "-3"], "--budget"),
    ],
)
def test_the_cli_refuses_a_bad_budget_before_any_work(tmp_path, argv, words):
    code, out, err = _cli(["verify", "--quick", "--out", str(tmp_path / "r"), "--no-cache", *argv])
    assert code == 2 and words in err and out == ""
    assert not (tmp_path / "r").exists()


def test_the_cli_table_shows_verdicts_before_and_after(tmp_path):
    code, out, err = _cli(
        ["verify", "--only", "consensus-rate", "--config", str(_toml(tmp_path)), "--settle", "--budget", "3",
         "--out", str(tmp_path / "r"), "--no-cache", "--no-progress", "--workers", "1"]
    )  # fmt: skip
    head = out.splitlines()[0].split()
    assert head[:3] == ["check", "before", "verdict"], out
    row = next(line for line in out.splitlines() if line.startswith("consensus-rate"))
    assert row.split()[1] == "INCONCLUSIVE"
    assert "settling:" in out and "consensus-rate round 1:" in out
    assert "## Settling" in (tmp_path / "r" / "report.md").read_text()


def _toml(tmp_path):
    p = tmp_path / "short.toml"
    p.write_text("Ks = [64, 128, 256]\nrate_replicas = 4\n")
    return p


def _speedup_data(L_by_n, f_star):
    runs = [
        {"n": n, "K": K, "f0": [5.0, 5.0], "stationarity": [1.0 / math.sqrt(n * K)] * 2, "effective_step": 0.1,
         "weight_min": 1.0}
        for n in (4, 8) for K in (256, 512)
    ]  # fmt: skip
    consts = {
        str(n): {"L": L, "sigma2": 1.0, "zeta2": 1.0, "f_lower": 0.0, "f_star": f_star} for n, L in L_by_n.items()
    }
    return {"Ks": [256, 512], "ns": [4, 8], "schedules": {"exponential": {"runs": runs}}, "constants_by_n": consts}


def test_claims_in_n_on_a_problem_that_changes_with_n_do_not_apply_and_say_what_would():
    from sgpverify.suite import check_linear_speedup

    moving = check_linear_speedup(QUICK, {"speedup": _speedup_data({4: 1.0, 8: 2.0}, None)})
    assert moving["verdict"] == "not applicable" and "changes with n" in moving["measured"]
    assert "declares f_star" in moving["detail"]  # the shape that would make it apply
    # control: the same problem declaring f* is normalised, and judged
    known = check_linear_speedup(QUICK, {"speedup": _speedup_data({4: 1.0, 8: 2.0}, 0.0)})
    assert known["verdict"] != "not applicable"
    fixed = check_linear_speedup(QUICK, {"speedup": _speedup_data({4: 1.0, 8: 1.0}, None)})
    assert fixed["verdict"] != "not applicable"


class _Noisy:
    """A stochastic problem of the user's (its noise cannot be switched off): f_i(x) = |x - c_i|^2 / 2."""

    def __init__(self, n, d, seed):
        self.c = np.random.default_rng(seed).standard_normal((n, d))
        self.n_nodes, self.dim = n, d
        self.L, self.sigma2, self.f_lower = 1.0, 0.25, 0.0
        self.zeta2 = float(np.mean(np.sum((self.c - self.c.mean(0)) ** 2, axis=1)))

    def grad(self, z, rng):
        return z - self.c + rng.standard_normal(np.shape(z)) * math.sqrt(self.sigma2 / self.dim)

    def full_grad(self, x):
        return np.asarray(x) - self.c.mean(0)

    def value(self, x):
        return np.mean(np.sum((np.asarray(x)[..., None, :] - self.c) ** 2, axis=-1), axis=-1) / 2


def _noisy(n, d, seed):
    return _Noisy(n, d, seed)


def test_worst_case_on_a_stochastic_problem_solves_its_deterministic_class():
    pytest.importorskip("cvxpy")
    from sgpverify import pep

    if not pep.has_pep():
        pytest.skip("no pep extra")
    res = suite.verify(problem=_noisy, only=["worst-case"], pep_Ks=(3,), pep_taus=(0,), d=3, controls=True)
    (c,) = res.checks
    assert c.verdict == "pass", c.detail
    assert "stochastic, sigma2 = 0.25" in c.detail and "derived / worst case" in c.measured
    assert c.control["detected"]  # the derived bound without its consensus term falls below the worst case


def test_a_round_that_cannot_run_here_or_a_failed_calibration_says_so():
    huge = _check("stationarity-rate", measured="not measured", detail="at K = 256 (n = 16) ... needs K >= 1e+13")

    def run(cfg, only, controls):  # never called
        raise AssertionError("a round ran")

    checks, rec = settle(_result([huge]), run, budget=60, per_step=(0.0, 1e-12), clock=_Clock())
    assert "cannot run here" in rec["left"]["stationarity-rate"] and "memory" in rec["left"]["stationarity-rate"]
    assert checks[0].verdict == "inconclusive"
    # a setting whose calibration run fails runs no round, and says why
    broken = dataclasses.replace(QUICK, problem=lambda n, d, seed: 1 / 0)
    checks, rec = settle(_result([huge], cfg=broken), run, budget=60, clock=_Clock())
    assert "calibration run failed (ZeroDivisionError" in rec["left"]["stationarity-rate"]


def test_controls_are_settled_too_and_a_detected_control_stays_detected():
    res = suite.verify(
        only=["consensus-rate"], Ks=(64, 128, 256), rate_replicas=4, controls=True, settle=True, budget=3
    )
    (c,) = res.checks
    rec = res.settle["checks"]["consensus-rate"]
    assert rec["before"] == "inconclusive" and c.verdict == "pass"
    assert c.control["detected"]  # the no-debias departure is caught, by a round if not by the planned run
    assert all(r["control"] != "pass" for r in rec["rounds"])  # settling never argues the departure into a pass


@pytest.mark.parametrize("key", ["rates", "speedup", "delays", "baselines", "topologies", "scaling", "complexity"])
def test_the_cost_model_counts_every_run_an_experiment_makes(tiny, key):  # noqa: F811
    # independent count: the steps x replicas x nodes of the run records the experiment actually wrote, against
    # the settle cost model's list (an upper estimate, but not a loose one); a ladder the model forgets (the
    # delay experiment runs delay_Ks and Ks) shows here
    from sgpverify.suite.cost import experiment_runs

    cfg, data = tiny
    actual = sum(r["K"] * len(r["stationarity"]) * r["n"] for r in suite.EXPERIMENTS[key].runs(data[key]))
    model = sum(K * R * n for K, R, n in experiment_runs(cfg, key))
    assert actual <= model * (1 + 1e-12) and model <= 1.5 * actual, (key, actual, model)


def test_the_cost_model_counts_the_delay_runs_of_both_ladders(tiny):  # noqa: F811
    # the delay experiment runs the ratio's delay_Ks and the exponent's Ks: a round that extends Ks alone
    # (delay-rate's) costs the delay runs at those K too
    from sgpverify.suite.cost import experiment_runs

    cfg, _ = tiny
    cfg = dataclasses.replace(cfg, delay_Ks=(32,), Ks=(32, 64), taus=(0, 1), delay_replicas=2)
    data = suite.EXPERIMENTS["delays"](cfg, 0)
    actual = sum(r["K"] * len(r["stationarity"]) * r["n"] for r in suite.EXPERIMENTS["delays"].runs(data))
    assert actual == sum(K * R * n for K, R, n in experiment_runs(cfg, "delays"))


def test_a_theorem_round_is_costed_at_its_threshold_not_at_the_cap():
    # Theorem 1's run takes max(threshold, K_max) steps (experiments.bounds.theorem_run_length); the cap keeps a
    # margin above the threshold (a power of two), and costing the round at the cap overstated it up to twice
    # (on the guide's setting 292 s estimated, 205 s run, at K = 716128 under a cap of 1048576)
    from sgpverify.suite.experiments.bounds import theorem_run_length

    ev = evidence_for(_check("theorem1-bound", measured="outside the theorem's regime: needs K >= 7.2e+05"), QUICK)
    assert ev.overrides == (("theorem_K_cap", 1048576),)
    sub = dataclasses.replace(QUICK, theorem_K_cap=1048576)
    # no threshold per schedule in the text: the nearest on every schedule
    assert len(ev.steps) == len(QUICK.topologies) and len(set(ev.steps)) == 1
    for thr in (7.15e5, 7.2e5, 7.249e5):  # every threshold that prints as 7.2e+05: the estimate's steps cover its run
        assert theorem_run_length(sub, thr) <= ev.steps[0] < 1.06 * thr
    per_step = (1e-5, 1e-6, 0.0)  # no connectivity stream: the runs alone
    at_cap = estimate_seconds(sub, ["theorem1-bound"], per_step) - 3.0
    at_thr = estimate_seconds(sub, ["theorem1-bound"], per_step, theorem_steps=ev.steps) - 3.0
    assert math.isclose(at_thr, at_cap * ev.steps[0] / 1048576, rel_tol=1e-12)
    # the connectivity stream, which covers the run, is costed over the same steps
    c = estimate_seconds(sub, ["theorem1-bound"], (0.0, 0.0, 1e-6), theorem_steps=ev.steps) - 3.0
    assert math.isclose(c, 1e-6 * ev.steps[0] * len(QUICK.topologies), rel_tol=1e-12)
    # a rung the rate ladder already passes: the run is the ladder's end
    low = evidence_for(_check("theorem1-bound", measured="outside the theorem's regime: needs K >= 3e+02"), sub)
    assert not low.runs  # within the cap: nothing to run


def test_an_infinite_product_constant_lengthens_the_horizon_not_the_ladder(tiny):  # noqa: F811
    """Where the products of the augmented matrices do not contract within bound_horizon (S2 = inf:
    seen on the directed ring at n = 16 with tau = 4), the delay bound says so and its round lengthens
    the horizon: a longer K ladder would measure the same infinite S2."""
    import copy

    cfg, data = tiny
    data = copy.deepcopy(data)
    tau = str(cfg.taus[-1])
    data["delays"]["products"][tau]["S2"] = math.inf
    check = suite.make_check(suite.BY_NAME["delay-consensus"], cfg, data)
    assert check.verdict == "inconclusive" and f"bound_horizon = {cfg.bound_horizon}" in check.detail
    ev = evidence_for(check, cfg)
    assert ev.overrides == (("bound_horizon", 4 * cfg.bound_horizon),), ev
    honest = suite.make_check(suite.BY_NAME["delay-consensus"], cfg, tiny[1])  # every S2 finite
    assert "bound_horizon" not in honest.detail and "bound_horizon" not in evidence_for(honest, cfg).why


def test_a_theorem_round_costs_only_the_schedules_whose_threshold_it_reaches():
    # each schedule runs at its own threshold, and one beyond the round's cap runs nothing: on the defaults'
    # schedules with a user's problem (tanh regression) the round ran one schedule (82 s) and was costed for
    # two (193 s)
    from sgpverify.suite.experiments.bounds import theorem_run_length

    detail = (
        "exponential: outside the theorem's regime: threshold (known part) 1.6e+06 with the envelope C = 0.438, "
        "q = 0.429 exceeds the largest K run (160000); with the Nedic-Olshevsky constants the threshold is 10^28.3; "
        "exponential-irregular: outside the theorem's regime: threshold (known part) 1.79e+07 with the envelope "
        "C = 0.606, q = 0.567 exceeds the largest K run (160000) (with the fitted pair C = 0.99, q = 0.553 it would "
        "be 1.12e+08); with the Nedic-Olshevsky constants the threshold is 10^164"
    )
    check = _check("theorem1-bound", measured="outside the theorem's regime: needs K >= 1.6e+06", detail=detail)
    ev = evidence_for(check, QUICK)
    assert ev.overrides == (("theorem_K_cap", 2097152),)
    sub = dataclasses.replace(QUICK, theorem_K_cap=2097152)
    assert len(ev.steps) == 1 and theorem_run_length(sub, 1.6049e6) <= ev.steps[0] < 1.01 * 1.6e6
    per_step = (1e-5, 1e-6, 0.0)
    one = estimate_seconds(sub, ["theorem1-bound"], per_step, theorem_steps=ev.steps) - 3.0
    both = estimate_seconds(sub, ["theorem1-bound"], per_step, theorem_steps=ev.steps * 2) - 3.0
    assert math.isclose(both, 2 * one, rel_tol=1e-12)
    # both thresholds within a larger cap: two runs, each at its own threshold
    wide = evidence_for(check, dataclasses.replace(QUICK, theorem_K_cap=2**26))
    assert not wide.runs  # 1.6e6 is within that cap already: the check would not ask for a round
    sub = dataclasses.replace(QUICK, theorem_K_cap=2**25)
    from sgpverify.suite.settle import _theorem_lengths

    lengths = _theorem_lengths(sub, detail, 1.6e6)
    assert len(lengths) == 2 and all(t <= s < 1.01 * t for s, t in zip(lengths, (1.6e6, 1.79e7)))
    # a threshold printed just above the cap that may lie below it is costed at the cap, not left out
    edge = _theorem_lengths(dataclasses.replace(QUICK, theorem_K_cap=1048576), "threshold (known part) 1.05e+06", 1e6)
    assert edge == (1048576,)


def test_a_control_unit_is_costed_by_the_runs_it_makes(monkeypatch):
    # independent count: the steps x replicas x nodes the engine runs for the control in a round (every call of
    # simulate_run), against the cost model's share; a control of an experiment on the setting's schedules runs
    # one of them (on the defaults' two schedules a control round was estimated at twice its time: 116 s for
    # 58 s), each control is a unit of its own, and a round runs the constant step's ladder as its longest run
    from sgpverify.suite import runs as runs_mod
    from sgpverify.suite.cost import control_units, experiment_runs

    cfg = dataclasses.replace(QUICK, Ks=(64, 128, 256), rate_replicas=4)
    assert len(cfg.topologies) == 2
    steps = []
    real = runs_mod.simulate_run

    def counted(cfg_, prob, topo, K, seed, gamma, replicas, **kw):
        steps.append(K * replicas * prob.n_nodes)
        return real(cfg_, prob, topo, K, seed, gamma, replicas, **kw)

    monkeypatch.setattr(runs_mod, "simulate_run", counted)
    for stream in (0, 1):  # the planned run's control (each K alone), a round's (one run)
        steps.clear()
        sub = dataclasses.replace(cfg, noise_stream=stream)
        part = suite.run_suite(sub, only=["stationarity-rate"], controls=True, controls_only=True, workers=1)
        runs = [r for sch in part.data["controls"]["constant-step:rates"]["schedules"].values() for r in sch["runs"]]
        assert [r["K"] for r in runs] == [64, 128, 256]
        ((key, share, variant),) = control_units(sub, ["stationarity-rate"])
        assert key == "rates" and math.isclose(share, 0.5, rel_tol=4 * np.finfo(float).eps)
        model = experiment_runs(sub, "rates", variant=variant) if stream else experiment_runs(sub, "rates")
        assert math.isclose(sum(steps), share * sum(K * R * n for K, R, n in model), rel_tol=1e-12), stream
    assert sum(steps) == 256 * 4 * cfg.n  # the round: one run of the longest K
    per_step = (1e-6, 1e-6)
    only = estimate_seconds(cfg, ["stationarity-rate"], per_step, controls=True, controls_only=True) - 3.0
    assert math.isclose(only, (1e-6 + 1e-6 * 4) * 256, rel_tol=1e-9)  # the main rates unit left out: K_max only
    # two checks whose controls run on the same experiment: two control units
    assert [k for k, *_ in control_units(cfg, ["stationarity-rate", "consensus-rate"])] == ["rates", "rates"]
    assert control_units(cfg, ["stationarity-rate", "stationarity-rate"]) == [("rates", 0.5, variant)]


def test_a_round_that_does_not_fit_with_its_controls_runs_the_checks_without_them():
    # the checks first: on tanh regression (Erdos-Renyi) the rate round with its controls (5 units) was
    # estimated just beyond the 10 minutes left, and three checks stayed inconclusive; without the controls
    # (2 units) it fits, the checks are judged, and the controls stay open for a later round or the hints
    from sgpverify.suite.settle import WITHOUT_CONTROLS, round_config

    clock = _Clock()
    modes = []

    def run(cfg, only, controls, controls_only=False):
        modes.append((tuple(only), controls, controls_only))
        clock.t += took
        ctl = {"verdict": "fail", "detected": True} if controls else None
        return _result([_check(nm, "pass", "m", "d", control=ctl) for nm in only], controls=controls)

    open_ctl = {"name": "constant-step", "verdict": "inconclusive", "detected": False, "measured": "x"}
    open_ctl["detail"] = "s: exponent -0.2 [-0.3, -0.1]; local slopes -0.2, -0.1, -0.1, -0.1"
    check = _check("stationarity-rate", "inconclusive", "m", "width 0.2; more replicas", control=open_ctl)
    sub = round_config(QUICK, evidence_for(check, QUICK).overrides)
    per_step = (1e-4, 1e-5, 0.0)
    with_ctl = estimate_seconds(sub, ["stationarity-rate"], per_step, True)
    bare = estimate_seconds(sub, ["stationarity-rate"], per_step, False)
    assert bare < with_ctl
    budget = 1.25 * (bare + with_ctl) / 2 / 60  # fits without the controls, not with them
    took = 0.9 * 60 * budget  # the round takes most of the budget: the control's own round does not fit
    checks, rec = settle(_result([check], controls=True), run, budget=budget, per_step=per_step, clock=clock)
    assert modes[0] == (("stationarity-rate",), False, False)
    assert checks[0].verdict == "pass" and checks[0].control["detected"] is False  # the control stays open
    (r,) = rec["checks"]["stationarity-rate"]["rounds"]
    assert WITHOUT_CONTROLS in r["why"] and r["control"] is None and not r["control_kept"]
    assert "stationarity-rate" in rec["next"]  # the control's own round, beyond the budget: in the hints
    # ... planned from the ladder its control was judged on (the planned run's), not from the round's
    want = list(QUICK.Ks) + [2 * QUICK.Ks[-1], 4 * QUICK.Ks[-1]]
    assert rec["next"]["stationarity-rate"]["config"] == [f"Ks = {want}"]
    # with room for the controls the same round runs with them
    modes.clear()
    settle(_result([check], controls=True), run, budget=2 * budget, per_step=per_step, clock=_Clock())
    assert modes[0] == (("stationarity-rate",), True, False)
