"""The suite's worst-case check: derived bound >= exact worst case >= measured, its control, and its
verdict without the pep extra (``not applicable``, which never changes the exit status)."""

import copy
import dataclasses

import pytest

from sgpverify import suite
from sgpverify.suite.claims import worstcase as claim

CFG = suite.config_from_dict(
    {"n": 4, "pep_n": 4, "pep_Ks": [3], "pep_taus": [0, 1], "topologies": ["exponential-irregular"]}
)


@pytest.fixture(scope="module")
def data():
    pytest.importorskip("cvxpy")
    pytest.importorskip("clarabel")
    pytest.importorskip("PEPit")
    return {"worstcase": suite.exp_worstcase(CFG, 0)}


def test_passes_on_the_defaults_with_the_four_numbers(data):
    res = suite.check_worst_case(CFG, data)
    assert res["verdict"] == "pass", res["detail"]
    rows = res["extra"]["rows"]
    assert [r["tau"] for r in rows] == [0, 1]
    for r in rows:
        assert r["measured"] <= r["worst_case"] * (1 + claim.PEP_RTOL)
        assert r["worst_case"] <= r["derived"]
        assert r["published"] > 0
    assert "published" in res["detail"] and "K outside its regime" in res["detail"]


def test_control_dropped_consensus_term_is_detected(data):
    ctl = suite.experiments.complete_worstcase_control(data["worstcase"], {"drop_term": "consensus"})
    res = suite.check_worst_case(CFG, {"worstcase": ctl})
    assert res["verdict"] == "fail"
    assert "the derivation is wrong" in res["detail"]


def test_a_run_above_the_worst_case_fails(data):
    bad = copy.deepcopy(data)
    e = bad["worstcase"]["entries"][0]
    e["measured"] = e["worst_case"] * (1 + 10 * claim.PEP_RTOL)
    res = suite.check_worst_case(CFG, bad)
    assert res["verdict"] == "fail" and "breaks the class" in res["detail"]
    ok = copy.deepcopy(data)
    ok["worstcase"]["entries"][0]["measured"] = ok["worstcase"]["entries"][0]["worst_case"]
    assert suite.check_worst_case(CFG, ok)["verdict"] == "pass"


def test_not_applicable_without_the_extra(monkeypatch):
    from sgpverify import pep

    monkeypatch.setattr(pep, "has_pep", lambda: False)
    d = suite.exp_worstcase(CFG, 0)
    res = suite.evaluate(suite.BY_NAME["worst-case"], CFG, {"worstcase": d})
    assert res["verdict"] == "not applicable"
    assert "install the pep extra" in res["measured"]
    chk = suite.Check("worst-case", res["verdict"], res["measured"], "-", "", "", "x")
    chk = dataclasses.replace(chk, control={"name": "c", "verdict": "not applicable", "detected": False})
    passing = suite.Check("mass-conservation", "pass", "", "", "", "", "x", control={"name": "c", "detected": True})
    result = suite.SuiteResult(config=CFG, seed=0, checks=(passing, chk), data={}, seconds=0.0, controls=True)
    assert result.status == 0 and result.passed
    from sgpverify.report import format_table, summary_line

    assert "1 not applicable" in summary_line(result)
    assert "controls detected 1/1" in summary_line(result)
    assert "c: not applicable" in format_table(result.checks)
    # an inconclusive check still gives 4, and a failing one 1
    inc = dataclasses.replace(passing, verdict="inconclusive")
    assert suite.SuiteResult(config=CFG, seed=0, checks=(inc, chk), data={}, seconds=0.0).status == 4


def test_config_refuses_bad_pep_settings():
    with pytest.raises(ValueError, match="pep_taus must be increasing integers >= 0"):
        suite.validate_config(suite.config_from_dict({"pep_taus": [1, 0]}))
    with pytest.raises(ValueError, match=r"pep_Ks must be at least 1 increasing positive integer, got \[0\]"):
        suite.validate_config(suite.config_from_dict({"pep_Ks": [0]}))


def test_verify_without_the_extra_exits_zero(monkeypatch):
    import sys

    monkeypatch.setitem(sys.modules, "cvxpy", None)  # import cvxpy now raises ImportError
    res = suite.run_suite(CFG, controls=True, only=["worst-case"])
    (chk,) = res.checks
    assert chk.verdict == "not applicable" and "install the pep extra" in chk.measured
    assert chk.control["detected"] is False
    assert res.status == 0 and res.to_dict()["status"] == "pass"
