"""A control whose decay is faster than predicted (a noise floor still far): its round's ladder goes to
where the floor turns the decay, predicted from its own local slopes (settle.floor_doublings)."""

import dataclasses
import math
import re

import numpy as np

from sgpverify.suite import QUICK, Check
from sgpverify.suite.settle import FLOOR_MARGIN, MAX_DOUBLINGS, SHIFT, evidence_for, floor_doublings

LADDER = (16384, 32768, 65536)


def _slopes(A, B, ladder):
    """Local slopes over the ladder of the stationarity average A/K + B (a constant step's floor B)."""
    K = np.asarray(ladder, dtype=float)
    m = A / K + B
    return np.log(m[1:] / m[:-1]) / np.log(K[1:] / K[:-1])


def _text(*lists, p=-0.5, delta=0.05):
    parts = [
        f"s{i}: exponent -0.9 [-0.91, -0.89] vs {p:g} +- {delta:g}: inconclusive (...); local slopes "
        + ", ".join(f"{v:.3f}" for v in sl)
        for i, sl in enumerate(lists)
    ]
    return "; ".join(parts)


def _first_doubling_past(A, B, ladder, target):
    """The doublings after which the last local slope of A/K + B lies at or above ``target``: a
    direct computation on the extended ladder, the second computation of the prediction."""
    for j in range(1, 40):
        ext = tuple(ladder) + tuple(ladder[-1] * 2**i for i in range(1, j + 1))
        if _slopes(A, B, ext)[-1] >= target:
            return j
    raise AssertionError("never")


def test_the_ladder_reaches_where_the_floor_turns_the_decay():
    target = -0.5 + FLOOR_MARGIN * 0.05
    for A, B in ((1.0, 1e-6), (1.0, 2e-7), (3.0, 1e-5), (1.0, 5e-8)):
        sl = _slopes(A, B, LADDER)
        got = floor_doublings(_text(sl), LADDER)
        assert got is not None, (A, B, sl)
        want = _first_doubling_past(A, B, LADDER, target)
        # the slopes are printed to 3 decimals: the prediction may land one doubling either side at most
        assert max(math.log2(SHIFT), min(MAX_DOUBLINGS, want - 1)) <= got[0] <= max(math.log2(SHIFT), want), (A, B)
        assert "noise floor" in got[1] and f"{got[0]} doublings more" in got[1]
        # the K it names: where the slope of A/K + B, -1/(1 + K B/A), reaches the target (within 10%: the
        # slopes over doublings stand for the slope at their midpoints, and are printed to 3 decimals)
        named = float(re.search(r"K ~ ([0-9.e+]+)", got[1]).group(1))
        rounding = 0.0005 / (-sl[-1] * (1.0 + sl[-1]))  # of q = -1/s - 1, from the slope's last printed digit
        assert abs(named / ((-1.0 / target - 1.0) * A / B) - 1.0) < 0.1 + rounding, (A, B, named)


def test_the_prediction_follows_the_nearest_list_and_its_bounds():
    near, far = _slopes(1.0, 1e-5, LADDER), _slopes(1.0, 1e-7, LADDER)
    j_near = floor_doublings(_text(near), LADDER)[0]
    j_far = floor_doublings(_text(far), LADDER)[0]
    assert j_near < j_far
    assert floor_doublings(_text(far, near), LADDER)[0] == j_near  # the nearest K*: one list failing detects it
    # at least today's two doublings; at most MAX_DOUBLINGS
    assert floor_doublings(_text([-0.7, -0.6]), LADDER)[0] == int(math.log2(SHIFT))
    assert floor_doublings(_text([-0.999, -0.995]), LADDER)[0] == MAX_DOUBLINGS


def test_no_prediction_where_the_decay_is_not_faster_than_predicted():
    assert floor_doublings(_text([-0.52, -0.51]), LADDER) is None  # in the band
    assert floor_doublings(_text([-0.3, -0.2]), LADDER) is None  # slow side: not a floor still coming
    assert floor_doublings(_text([-1.2, -1.1]), LADDER) is None  # beyond -1: not A/K + B
    assert floor_doublings(_text([-0.9]), LADDER) is None  # slopes not on this ladder
    assert floor_doublings("local slopes -0.9, -0.8", LADDER) is None  # no prediction named
    assert floor_doublings(_text([-1.5, -1.4], p=-1.0), LADDER) is None  # target -0.8: beyond -1 itself


def _control_check(name, control_detail):
    control = {"name": "constant-step", "verdict": "inconclusive", "detected": False, "measured": "x"}
    control["detail"] = control_detail
    return Check(name, "pass", "m", "-", "criterion", "detail", "x.py:1", control=control)


def test_a_control_round_extends_its_ladder_to_the_predicted_floor_with_its_start_kept():
    cfg = dataclasses.replace(QUICK, Ks=LADDER)
    sl = _slopes(1.0, 1e-7, LADDER)
    j = floor_doublings(_text(sl), LADDER)[0]
    assert j > int(math.log2(SHIFT))
    for name in ("stationarity-rate", "delay-rate"):
        ev = evidence_for(_control_check(name, _text(sl)), cfg)
        assert ev.overrides == (("Ks", LADDER + tuple(LADDER[-1] * 2**i for i in range(1, j + 1))),), name
        assert "noise floor" in ev.why and "its start kept" in ev.why
    # a control whose detail shows no faster decay: today's two doublings
    ev = evidence_for(_control_check("stationarity-rate", _text([-0.2, -0.1])), cfg)
    assert ev.overrides == (("Ks", LADDER + (131072, 262144)),)
    assert ev.why.endswith("two doublings more, its start kept")


def test_a_control_whose_constant_step_left_the_regime_starts_its_ladder_later():
    # the constant step's runs outside the step-size regime (weight dips, two steps in a row beyond 2/L at
    # K = 2^21): their step is set by the ladder's start, so the round is the regime's: the ladder starts at
    # the K the regime needs (its first points, scaled), where the constant step is smaller, not a longer
    # ladder from the same start (the floor's or two doublings), which leaves the step as it is
    from sgpverify.suite.claims.common import outside_step_regime

    cfg = dataclasses.replace(QUICK, Ks=LADDER)
    rec = {"K": 2**21, "n": 16, "gamma": math.sqrt(16 / LADDER[0]), "weight_min": 0.0024, "effective_step": 13.3}
    rec.update(steps_out_share=0.0011, steps_out_longest=2, weight_floor_share=0.05)
    why = outside_step_regime([rec], lambda r: 3.0)
    assert "needs K >= 32768 there" in why  # twice the start's K (printed whole): the quantile is within 2/L
    for name in ("stationarity-rate", "delay-rate"):
        ev = evidence_for(_control_check(name, f"{_text(_slopes(1.0, 1e-7, LADDER))}; {why}"), cfg)
        assert ev.overrides == (("Ks", (32768, 65536, 131072)),), name
        assert "the step-size regime needs K >= 3.3e+04" in ev.why


def _tau_text(by_tau, p=-0.5, delta=0.05):
    """A delay-rate detail as check_delay_rate writes it: one list of local slopes per tau."""
    return "; ".join(
        f"tau={tau} (erdos-renyi, random delays): exponent -0.9 [-0.91, -0.89] vs {p:g} +- {delta:g}: "
        f"inconclusive (tau={tau} stationarity); local slopes " + ", ".join(f"{v:.3f}" for v in sl)
        for tau, sl in by_tau.items()
    )


def test_a_delay_control_round_runs_the_delay_whose_floor_is_nearest_alone():
    # one delay whose rate fails detects the constant step; the other delays' runs would only be reported
    cfg = dataclasses.replace(QUICK, Ks=LADDER)
    near, far = _slopes(1.0, 1e-5, LADDER), _slopes(1.0, 1e-7, LADDER)
    for order in ((1, 2, 4), (4, 1, 2), (2, 4, 1)):
        slopes = dict(zip(order, (far, near, far)))  # the second-named delay has the nearest floor
        ev = evidence_for(_control_check("delay-rate", _tau_text(slopes)), cfg)
        j = floor_doublings(_text(near), LADDER)[0]
        assert ev.overrides == (
            ("Ks", LADDER + tuple(LADDER[-1] * 2**i for i in range(1, j + 1))),
            ("taus", (0, order[1])),
        ), order
        assert f"on tau = {order[1]} alone" in ev.why
    # two delays in the configuration (0 and one): nothing to leave out; a detail that names no delay, or a
    # delay the configuration does not run: the taus as they are
    for c, text in (
        (dataclasses.replace(cfg, taus=(0, 2)), _tau_text({2: near})),
        (cfg, _text(far, near, far)),
        (cfg, _tau_text({1: far, 3: near, 4: far})),
    ):
        ev = evidence_for(_control_check("delay-rate", text), c)
        assert [k for k, _ in ev.overrides] == ["Ks"], text
    # the stationarity-rate control's lists are schedules, not delays
    ev = evidence_for(_control_check("stationarity-rate", _tau_text({1: far, 2: near})), cfg)
    assert [k for k, _ in ev.overrides] == ["Ks"]
