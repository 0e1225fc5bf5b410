"""Equilibrium skewness kappa_pi, beta_pi and the directed-graph lower bound, each against an
independent computation, with controls where the bound's conditions fail."""

import math

import numpy as np
import pytest

import sgpverify as sv
from sgpverify.assumptions.skewness import directed_lower_bound, equilibrium, window_equilibrium


def _random_column_stochastic(n, seed):
    rng = np.random.default_rng(seed)
    A = rng.random((n, n)) * (rng.random((n, n)) < 0.5) + np.eye(n) + np.roll(np.eye(n), 1, axis=0)  # a cycle
    return A / A.sum(axis=0)


@pytest.mark.parametrize("seed", range(5))
def test_perron_vector_and_beta_against_power_iteration_and_the_definition(seed):
    n = 7
    W = _random_column_stochastic(n, seed)
    e = equilibrium(W)
    pi = np.full(n, 1.0 / n)
    for _ in range(5000):  # power iteration: W^t x -> pi (1^T x) for a primitive column-stochastic W
        pi = W @ pi
    np.testing.assert_allclose(e.pi, pi, rtol=1e-10)
    assert math.isclose(e.kappa_pi, pi.max() / pi.min(), rel_tol=1e-9)
    # beta_pi as the largest ratio ||(W - pi 1^T) x||_pi / ||x||_pi over many directions, a lower estimate
    rng = np.random.default_rng(seed)
    X = rng.standard_normal((n, 4000))
    norm = lambda v: np.linalg.norm(v / np.sqrt(pi)[:, None], axis=0)  # noqa: E731
    ratios = norm((W - np.outer(pi, np.ones(n))) @ X) / norm(X)
    assert ratios.max() <= e.beta_pi * (1 + 1e-12) and ratios.max() >= 0.5 * e.beta_pi


def test_doubly_stochastic_symmetric_matrices_have_uniform_pi_and_beta_their_second_eigenvalue():
    W = sv.mixing.metropolis_matrix(sv.graphs.by_name("ring-bidir", 8), 0).toarray()
    e = equilibrium(W)
    lam = np.sort(np.abs(np.linalg.eigvalsh(W)))[::-1]
    assert math.isclose(e.kappa_pi, 1.0, rel_tol=1e-12) and math.isclose(e.beta_pi, lam[1], rel_tol=1e-9)


def test_conditions_fail_where_the_paper_says_they_must():
    # a reducible matrix: no unique Perron vector
    e = equilibrium(np.eye(3))
    assert not e.conditions and "reducible" in e.why
    # the one-peer exponential graph at n = 16: its period product is exact averaging, beta_pi = 0
    e = window_equilibrium(sv.graphs.exponential(16))
    assert e.window == 4 and not e.conditions and "zero to round-off" in e.why
    # the directed ring: beta_pi > 1 - 1/n
    e = window_equilibrium(sv.graphs.ring(16))
    assert not e.conditions and "> 1 - 1/n" in e.why
    # the control: an irregular schedule where they hold
    e = window_equilibrium(sv.graphs.by_name("exponential-irregular", 16))
    assert e.conditions and e.kappa_pi > 1


def test_the_lower_bound_is_the_papers_expression():
    e = equilibrium(_random_column_stochastic(5, 1))
    L, D, s2, n, eps = 2.0, 3.0, 0.5, 5, 0.1
    want = s2 * L * D / (n * eps**2) + (1 + math.log(e.kappa_pi)) * L * D / ((1 - e.beta_pi) * eps)
    assert math.isclose(directed_lower_bound(L=L, delta_f=D, sigma2=s2, n=n, eps=eps, eq=e), want, rel_tol=1e-12)
    with pytest.raises(ValueError, match="eps must be"):
        directed_lower_bound(L=L, delta_f=D, sigma2=s2, n=n, eps=0.0, eq=e)


@pytest.mark.slow
def test_the_constants_page_shows_what_the_directed_bound_example_prints():
    import subprocess
    import sys
    from pathlib import Path

    root = Path(__file__).resolve().parent.parent
    script = root / "docs" / "examples" / "directed_bound.py"
    out = subprocess.run([sys.executable, str(script)], capture_output=True, text=True, check=True).stdout
    page = (root / "docs" / "constants.md").read_text()
    assert out.strip() and all(line in page for line in out.strip().splitlines())


def test_the_mixing_command_reports_the_equilibrium_skewness_and_the_bounds_conditions():
    import io
    import json

    from sgpverify import graphs
    from sgpverify.assumptions.skewness import window_equilibrium
    from sgpverify.cli import main

    def mixing(*argv):
        out, err = io.StringIO(), io.StringIO()
        assert main(["mixing", *argv], out=out, err=err) == 0, err.getvalue()
        return out.getvalue()

    d = json.loads(mixing("--topology", "random-peer", "--nodes", "16", "--horizon", "40", "--json"))["equilibrium"]
    ref = window_equilibrium(graphs.random_peer(16, seed=0))  # the same schedule, measured directly
    assert d["measured"] and d["window"] == ref.window and d["conditions"] == ref.conditions and d["why"] == ref.why
    assert abs(d["kappa_pi"] - ref.kappa_pi) <= 1e-12 * ref.kappa_pi and abs(d["beta_pi"] - ref.beta_pi) <= 1e-12
    text = mixing("--topology", "ring", "--nodes", "8", "--horizon", "40")
    assert "kappa_pi, beta_pi" in text and "its conditions do not hold: beta_pi" in text  # 0.924 > 1 - 1/8
    assert text.rstrip().splitlines()[-1].startswith("all mixing assumptions")  # the summary stays last
    big = mixing("--topology", "exponential", "--nodes", "2048", "--horizon", "20")
    assert "kappa_pi, beta_pi       not measured: n = 2048 > 1024" in big
