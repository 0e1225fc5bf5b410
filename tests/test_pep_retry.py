"""A Clarabel solve that ends "optimal_inaccurate" is repeated once without equilibration."""

import math
import warnings

import pytest

cp = pytest.importorskip("cvxpy")
pytest.importorskip("clarabel")

from sgpverify import pep  # noqa: E402
from sgpverify.graphs import exponential  # noqa: E402

ARGS = dict(L=1.5, tau=0, delta=1.0, zeta2=1.0)


def _solve(n, K, symmetry, **opts):
    return pep.worst_case(
        exponential(n), K, step_size=min(math.sqrt(n / K), 1 / 1.5), symmetry=symmetry, solver_options=opts, **ARGS
    )


@pytest.fixture
def first_solves_inaccurate(monkeypatch):
    """Every solve with Clarabel's equilibration (its default) reports "optimal_inaccurate", the others keep
    their own status: the retry's logic, without depending on where Clarabel stops on this machine."""
    real = cp.Problem.solve
    calls = []

    def solve(self, *args, **kwargs):
        out = real(self, *args, **kwargs)
        calls.append(kwargs.get("equilibrate_enable"))
        if kwargs.get("equilibrate_enable") is None and self.status == cp.OPTIMAL:
            self._status = cp.OPTIMAL_INACCURATE
        return out

    monkeypatch.setattr(cp.Problem, "solve", solve)
    return calls


@pytest.mark.parametrize("symmetry", ["auto", None])
def test_an_inaccurate_solve_is_repeated_without_equilibration(first_solves_inaccurate, symmetry):
    ref = _solve(4, 3, symmetry, equilibrate_enable=False)  # the caller's option: no retry
    assert first_solves_inaccurate == [False]
    with warnings.catch_warnings():
        warnings.simplefilter("error")  # the first solve's warning is not passed on where the retry stands
        wc = _solve(4, 3, symmetry)
    assert first_solves_inaccurate == [False, None, False]
    assert wc.status == "optimal"
    assert wc.value == pytest.approx(ref.value, rel=1e-6)


def test_the_callers_equilibration_is_left_alone(first_solves_inaccurate):
    wc = _solve(4, 3, "auto", equilibrate_enable=True)
    assert first_solves_inaccurate == [True]
    assert wc.status == "optimal"  # the fixture marks only solves without the option


def test_a_retry_that_is_not_optimal_leaves_the_first_solve_and_its_warning(monkeypatch):
    real = cp.Problem.solve

    def solve(self, *args, **kwargs):
        out = real(self, *args, **kwargs)
        self._status = cp.OPTIMAL_INACCURATE
        if kwargs.get("equilibrate_enable") is None:
            warnings.warn("Solution may be inaccurate.", UserWarning, stacklevel=1)
        return out

    monkeypatch.setattr(cp.Problem, "solve", solve)
    with pytest.warns(UserWarning, match="inaccurate"):
        wc = _solve(4, 3, "auto")
    assert wc.status == "optimal_inaccurate"


def test_the_reduced_sdp_at_n8_with_a_delay_ends_optimal():
    """A real case: exponential graph, n = 8, K = 6, tau = 1, reduced (Z_8). With equilibration Clarabel
    stopped at its reduced tolerances on this machine; the value agrees with the solve without it."""
    g = min(math.sqrt(8 / 6), 1 / 1.5)
    args = dict(ARGS, tau=1)
    wc = pep.worst_case(exponential(8), 6, step_size=g, symmetry="auto", **args)
    plain = dict(equilibrate_enable=False)
    ref = pep.worst_case(exponential(8), 6, step_size=g, symmetry="auto", solver_options=plain, **args)
    assert wc.symmetry == "Z_8" and ref.status == "optimal"
    assert wc.status == "optimal"
    assert wc.value == pytest.approx(ref.value, rel=1e-6)


def test_the_warnings_of_a_solve_that_stands_reach_the_caller(monkeypatch):
    """Warnings are held back only where the retry replaced the first solve: an optimal first solve's
    warnings (here one planted) reach the caller as before."""
    real = cp.Problem.solve

    def solve(self, *args, **kwargs):
        warnings.warn("a note of the solver", UserWarning, stacklevel=1)
        return real(self, *args, **kwargs)

    monkeypatch.setattr(cp.Problem, "solve", solve)
    with pytest.warns(UserWarning, match="a note of the solver"):
        wc = _solve(4, 3, "auto")
    assert wc.status == "optimal"
