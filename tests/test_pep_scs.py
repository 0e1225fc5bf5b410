"""worst_case(..., solver="SCS"): a first-order solve, checked a posteriori (sgpverify.pep.posterior).

Tolerances: Clarabel's reference is good to about side * 1e-8 (side <= 60 here); SCS stopped at
eps_abs = eps_rel = 1e-8 agrees with it to its residuals (measured 1e-9 relative at n = 4, K = 6),
so 1e-6 relative (the suite's PEP_RTOL) is a bound with room, and the check's own tolerance
``max(1e-6, 1e-7 * side)`` is what an "optimal" status promises.
"""

import math

import numpy as np
import pytest

pytest.importorskip("cvxpy")
pytest.importorskip("clarabel")
cp = pytest.importorskip("cvxpy")
if "SCS" not in cp.installed_solvers():
    pytest.skip("SCS is not installed", allow_module_level=True)

import scipy.sparse as sp  # noqa: E402

import sgpverify as sv  # noqa: E402
from sgpverify import pep  # noqa: E402
from sgpverify.pep import posterior, reduced  # noqa: E402

N, K = 4, 6
TIGHT = dict(eps_abs=1e-8, eps_rel=1e-8, max_iters=200_000)
LOOSE = dict(eps_abs=1e-5, eps_rel=1e-5, max_iters=200_000)


def _wc(solver="CLARABEL", opts=None, **kw):
    top = sv.graphs.exponential(N)
    return pep.worst_case(
        top, K, L=1.0, step_size=min(math.sqrt(N / K), 1.0), zeta2=1.0, solver=solver, solver_options=opts, **kw
    )


@pytest.fixture(scope="module")
def clarabel():
    return _wc()


@pytest.fixture(scope="module")
def tight():
    return _wc("SCS", TIGHT)


def test_scs_tight_agrees_with_clarabel_and_is_certified(clarabel, tight):
    assert clarabel.status == "optimal" and tight.symmetry == clarabel.symmetry == "Z_4"
    assert tight.status == "optimal"
    c = tight.check
    assert c["passed"] and c["solver_status"] == "solved"
    assert c["rtol"] == pytest.approx(max(1e-6, 1e-7 * tight.gram_size))
    assert abs(tight.value - clarabel.value) <= 1e-6 * clarabel.value
    # the certified dual bound is an upper bound: above Clarabel's value up to Clarabel's own tolerance
    assert tight.dual_value is not None and tight.dual_value >= clarabel.value * (1 - 1e-7)
    assert tight.duality_gap <= c["rtol"] * tight.value
    assert max(c["max_violation"], c["full_violation"]) <= c["rtol"] and c["lambda_min"] >= -c["rtol"]
    assert tight.check is not None and clarabel.check is None


def test_scs_loose_is_not_called_optimal(clarabel):
    wc = _wc("SCS", LOOSE)
    c = wc.check
    assert c["solver_status"] == "solved"  # SCS says solved on its own residuals ...
    assert abs(wc.value - clarabel.value) > c["rtol"] * clarabel.value  # ... the value is off by more ...
    assert wc.status == "optimal_inaccurate" and not c["passed"]  # ... and the record says so
    assert wc.dual_value is None or wc.dual_value >= clarabel.value * (1 - 1e-7)


def test_scs_full_sdp_and_min_measure(clarabel):
    full = _wc("SCS", TIGHT, symmetry=None)
    assert full.symmetry is None and full.check is not None
    assert abs(full.value - clarabel.value) <= 1e-6 * clarabel.value
    assert full.status == ("optimal" if full.check["passed"] else "optimal_inaccurate")
    mn_ref = _wc(measure="min")
    mn = _wc("SCS", TIGHT, measure="min")
    assert abs(mn.value - mn_ref.value) <= 1e-6 * mn_ref.value
    # a certified bound, where one is given, lies above the exact worst case
    if mn.dual_value is not None:
        assert mn.dual_value >= mn_ref.value * (1 - 1e-7)
    assert mn.status == ("optimal" if mn.check["passed"] else "optimal_inaccurate")


def test_a_tightened_constraint_is_caught(monkeypatch, tight):
    """Feed the check a constraint tighter than the one solved (rhs lowered by 1e-3 of the scale
    on the rows the solution meets): the returned point violates it, and the check must fail."""
    real = reduced.check_first_order

    def planted(prob, cons, measure, Mq, A, Bf, rhs, *rest):
        return real(prob, cons, measure, Mq, A, Bf, rhs - 1e-3 * max(1.0, float(np.abs(rhs).max())), *rest)

    monkeypatch.setattr(reduced, "check_first_order", planted)
    wc = _wc("SCS", TIGHT)
    assert wc.status == "optimal_inaccurate" and not wc.check["passed"]
    assert wc.check["max_violation"] > 1e-4


def test_a_flipped_objective_is_caught(monkeypatch):
    """Feed the check the opposite objective: the measure it recomputes is then -value, far from SCS's
    objective and from the dual bound."""
    real = reduced.check_first_order

    def planted(prob, cons, measure, Mq, *rest):
        return real(prob, cons, measure, -Mq, *rest)

    monkeypatch.setattr(reduced, "check_first_order", planted)
    wc = _wc("SCS", TIGHT)
    assert wc.check["value"] == pytest.approx(-wc.value, rel=1e-9)
    assert wc.status == "optimal_inaccurate" and not wc.check["passed"]


def test_a_tolerance_claimed_tighter_fails(monkeypatch):
    monkeypatch.setattr(reduced, "check_first_order", _with_rtol(reduced.check_first_order, 1e-13))
    wc = _wc("SCS", TIGHT)
    assert wc.status == "optimal_inaccurate" and not wc.check["passed"] and wc.check["rtol"] == 1e-13


def _with_rtol(fn, rtol):
    def g(*a, **k):
        old = posterior.check_rtol
        posterior.check_rtol = lambda side: rtol
        try:
            return fn(*a, **k)
        finally:
            posterior.check_rtol = old

    return g


def test_tolerance_rule_is_the_suites():
    """One rule for this check and the suite's worst-case check: 1e-6 up to side 10, 1e-7 per unit of side
    beyond, and the suite adds the duality gap on top."""
    from sgpverify.suite.criteria import pep_tolerance

    assert posterior.check_rtol(5) == pytest.approx(1e-6) and posterior.check_rtol(1000) == pytest.approx(1e-4)
    for side in (5, 37, 169, 1000):
        entry = {"worst_case": 2.0, "dual": 2.0 * (1 + 3e-7), "gram_size": side}
        assert pep_tolerance(entry) == pytest.approx(posterior.check_rtol(side) + 3e-7, rel=1e-9)


def test_balance_makes_the_function_value_equations_hold():
    rng = np.random.default_rng(0)
    B = sp.csr_array(rng.choice([-1.0, 0.0, 1.0], size=(30, 4)))
    y = rng.random(30)
    yb, res = posterior.balance(B, y)
    assert np.all(yb >= 0) and res <= 1e-12 * max(1.0, float(yb.max()))
    assert np.abs(B.T @ yb).max() == pytest.approx(res, abs=1e-15)


def test_check_on_a_tiny_sdp():
    """max <C, X> s.t. trace X <= 1, X PSD (2 x 2): the value is lambda_max(C) = 3; the check certifies it,
    and a constraint fed with the wrong sign (-trace X <= -1 read as trace X <= -1) is caught."""
    C = np.array([[2.0, 1.0], [1.0, 2.0]])
    X = cp.Variable((2, 2), PSD=True)
    z = cp.vec(X, order="C")
    A = sp.csr_array(np.eye(2).ravel()[None, :])
    Bf = sp.csr_array(np.zeros((1, 1)))
    cons = [A @ z <= np.array([1.0])]
    prob = cp.Problem(cp.Maximize(C.ravel() @ z), cons)
    prob.solve(solver="SCS", **TIGHT)
    kw = dict(
        A=A,
        Bf=Bf,
        c=C.ravel(),
        z=X.value.ravel(),
        F=np.zeros(1),
        y=np.asarray(cons[0].dual_value, dtype=float).ravel(),
        blocks=[(slice(0, 4), lambda s: s.reshape(2, 2))],
        scale=1.0,
        value=float(C.ravel() @ X.value.ravel()),
        reported=float(prob.value),
        rtol=1e-6,
        solver_status="solved",
        solved=True,
    )
    ok = posterior.check_solution(rhs=np.array([1.0]), **kw)
    assert ok.passed and ok.dual_bound == pytest.approx(3.0, rel=1e-6) and ok.value == pytest.approx(3.0, rel=1e-6)
    bad = posterior.check_solution(rhs=np.array([-1.0]), **kw)
    assert not bad.passed and bad.max_violation == pytest.approx(2.0, rel=1e-6)
    assert not posterior.check_solution(rhs=np.array([1.0]), **{**kw, "solved": False}).passed
    assert not posterior.check_solution(rhs=np.array([1.0]), **{**kw, "reported": 3.1}).passed
    # an indefinite X of trace 1 and value 3 (the bound): only its negative eigenvalue (-0.14) gives it away
    Xbad = np.array([[0.9, 0.5], [0.5, 0.1]])
    ind = posterior.check_solution(rhs=np.array([1.0]), **{**kw, "z": Xbad.ravel(), "value": 3.0, "reported": 3.0})
    assert not ind.passed and ind.lambda_min < -0.1 and ind.max_violation <= 1e-12
