"""Property tests of a user's own gossip code with sgpverify's public Hypothesis strategies.

Run: ``pytest docs/examples/test_my_matrices.py`` (needs the ``test`` extra). Replace
``my_gossip_step`` by your implementation; each test draws matrices, schedules and delay
patterns from sgpverify.testing.strategies and checks what any push-sum step must satisfy.
"""

import numpy as np
from hypothesis import given, settings
from hypothesis import strategies as st

import sgpverify as sv
from sgpverify.testing import strategies as sgst


def my_gossip_step(P, x, w):
    """The code under test: one push-sum step, numerators x (n, d) and weights w (n,)."""
    return P @ x, P @ w


@settings(max_examples=50, deadline=None)
@given(sgst.column_stochastic_matrices(max_n=12, sparse=True), st.integers(1, 4))
def test_my_gossip_conserves_mass(P, d):
    n = P.shape[0]
    x = np.random.default_rng(0).normal(size=(n, d))
    x1, w1 = my_gossip_step(P, x, np.ones(n))
    tol = 8 * n * np.finfo(float).eps * (np.abs(x).sum() + n)
    assert np.allclose(x1.sum(axis=0), x.sum(axis=0), rtol=0, atol=tol)
    assert abs(w1.sum() - n) <= tol


@settings(max_examples=25, deadline=None)
@given(sgst.topologies(min_n=2, max_n=16))
def test_my_gossip_keeps_weights_positive_on_any_schedule(topo):
    n = topo.n
    x, w = np.ones((n, 1)), np.ones(n)
    for k in range(3 * n):
        x, w = my_gossip_step(sv.mixing.push_matrix(topo, k=k), x, w)
    assert np.all(w > 0)
    assert np.allclose(x[:, 0] / w, 1.0)  # equal starts stay equal after de-biasing
