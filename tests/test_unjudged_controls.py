"""A control whose check is inconclusive on the honest setting too is "not judged", not missed: counted
apart, the exit status the check's (4, not 1), open to a round that decides the check, and a miss again
where a round decides the check without judging it. Only where both verdicts are inconclusive."""

from sgpverify.report import format_table, summary_line
from sgpverify.suite import QUICK, Check, SuiteResult
from sgpverify.suite.claims import BY_NAME
from sgpverify.suite.records import EXCUSES, control_ok, control_record, exit_status
from sgpverify.suite.settle import _merge, needs_settling, round_controls

THEOREM, RATE = BY_NAME["theorem1-bound"], BY_NAME["stationarity-rate"]


def _check(name, verdict, control=None):
    return Check(name, verdict, "m", "p", "c", "d", "x.py:1", extra={}, control=control)


def _result(*checks):
    return SuiteResult(config=QUICK, seed=0, checks=checks, data={}, seconds=1.0, controls=True)


def _ctl(verdict):
    return {"verdict": verdict, "measured": "outside the theorem's regime: needs K >= 3.7e+08", "detail": "d"}


def test_a_control_is_not_judged_only_where_its_check_and_it_are_both_inconclusive():
    for claim in (THEOREM, RATE):
        rec = control_record(claim, _check(claim.name, "inconclusive"), _ctl("inconclusive"))
        assert not rec["detected"] and "unjudged" in rec, rec
        # the check decided: an undecided control is a miss
        assert "unjudged" not in control_record(claim, _check(claim.name, "pass"), _ctl("inconclusive"))
        # the departure passes where the honest run could not be decided: a miss, not an excuse
        assert "unjudged" not in control_record(claim, _check(claim.name, "inconclusive"), _ctl("pass"))
        rec = control_record(claim, _check(claim.name, "inconclusive"), _ctl("fail"))
        assert rec["detected"] and "unjudged" not in rec


def test_a_control_not_judged_leaves_the_exit_status_to_its_check_and_the_summary_says_so():
    ctl = control_record(THEOREM, _check(THEOREM.name, "inconclusive"), _ctl("inconclusive"))
    open_ = _check(THEOREM.name, "inconclusive", control=ctl)
    res = _result(open_, _check("mass-conservation", "pass"))
    assert control_ok(open_) and exit_status(res) == 4  # was 1: "SOME CONTROLS NOT DETECTED"
    line = summary_line(res)
    assert "controls detected 1/1" in line and f"{EXCUSES['unjudged'][1]}: theorem1-bound" in line, line
    assert f"{THEOREM.control.name} ({EXCUSES['unjudged'][0]})" in format_table(res.checks, width=200)
    # a decided check whose control is undecided is a miss: exit 1
    missed = _check(RATE.name, "pass", control=control_record(RATE, _check(RATE.name, "pass"), _ctl("inconclusive")))
    assert not control_ok(missed) and exit_status(_result(open_, missed)) == 1


def test_a_control_not_judged_stays_open_to_settling_and_is_a_miss_once_its_check_is_decided_without_it():
    ctl = control_record(THEOREM, _check(THEOREM.name, "inconclusive"), _ctl("inconclusive"))
    old = _check(THEOREM.name, "inconclusive", control=ctl)
    assert needs_settling(old) and round_controls([old], True) == (True, False)  # the round runs it
    # a round that decides the check and judges the control: the round's control
    new_ctl = control_record(THEOREM, _check(THEOREM.name, "pass"), _ctl("fail"))
    got = _merge(old, _check(THEOREM.name, "pass", control=new_ctl), 1, 1, "why", ())
    assert got.control["detected"] and control_ok(got)
    # a round that decides the check without its control (it did not fit): the control is a miss again
    got = _merge(old, _check(THEOREM.name, "pass"), 1, 1, "why", ())
    assert got.verdict == "pass" and "unjudged" not in got.control and not control_ok(got)
    assert needs_settling(got)  # and a later round may still judge it
    # a round that leaves the check inconclusive keeps the control not judged
    got = _merge(old, _check(THEOREM.name, "inconclusive"), 1, 1, "why", ())
    assert "unjudged" in got.control and control_ok(got)
