"""The declared-constants control declares a smoothness constant the gradients refute on every setting:
L/2 where that is below the curvature they show, else half that curvature (a loose declared L)."""

import dataclasses

import pytest

from sgpverify import suite
from sgpverify.problems import QuadraticCosine
from sgpverify.suite import QUICK
from sgpverify.suite.claims import BY_NAME
from sgpverify.suite.experiments.problem import exp_declared

CONTROL = BY_NAME["declared-constants"].control.variant


class Loose:
    """An honest problem whose declared L is ``factor`` times its own (a true but loose bound)."""

    def __init__(self, n, d, seed, factor=8.0):
        self._p = QuadraticCosine(n, d, seed=seed)
        self.L = float(self._p.L) * factor

    def __getattr__(self, name):
        return getattr(self._p, name)


def _cfg(factor):
    return dataclasses.replace(QUICK, problem=lambda n, d, seed: Loose(n, d, seed, factor))


@pytest.mark.parametrize("factor", [3.0, 8.0])
def test_a_loose_declared_L_gets_a_control_the_gradients_refute(factor):
    honest = exp_declared(_cfg(factor), 0)
    assert not honest["L"]["refuted"] and 0 < honest["L"]["estimate"] < honest["L"]["declared"] / 2
    ctl = exp_declared(_cfg(factor), 0, CONTROL)
    assert ctl["L"]["refuted"], ctl["L"]
    # half of the curvature the honest run shows, not L/2 (which is no lie the gradients can show here)
    assert ctl["L"]["declared"] == pytest.approx(CONTROL.declare_L * honest["L"]["estimate"], rel=1e-12)
    assert "loose bound" in ctl["control_L"] and f"{honest['L']['estimate']:.4g}" in ctl["control_L"]


def test_a_refutable_L_over_2_is_declared_as_it_is():
    """On the defaults L/2 lies below what the gradients show: the control declares it, and the data carries
    no trace of the fallback (the defaults' bits)."""
    honest = exp_declared(QUICK, 0)
    ctl = exp_declared(QUICK, 0, CONTROL)
    assert ctl["L"]["refuted"] and "control_L" not in ctl
    assert ctl["L"]["declared"] == pytest.approx(CONTROL.declare_L * honest["L"]["declared"], rel=1e-12)


def test_the_check_on_a_loose_setting_detects_its_control_and_says_which_constant():
    res = suite.run_suite(_cfg(8.0), controls=True, only=["declared-constants"])
    (chk,) = res.checks
    assert chk.verdict == "pass" and chk.control["detected"], chk.control
    ctl_data = res.data["controls"]["declared-L-half:declared"]
    assert "control_L" in ctl_data
