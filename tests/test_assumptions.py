"""Tests of sgpverify.assumptions: each measured quantity against a known answer
or an independent computation (networkx, dense matrix products)."""

import math

import networkx as nx
import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

import sgpverify as sv
from sgpverify import assumptions, graphs, mixing
from sgpverify.testing import strategies as sgst

EPS = np.finfo(float).eps


# ---------------------------------------------------------------- B and diameter


def _brute_B(topo, horizon):
    """Independent B: networkx strong connectivity of every window union."""
    for B in range(1, horizon + 1):
        ok = True
        for l in range(horizon // B):
            g = nx.DiGraph()
            g.add_nodes_from(range(topo.n))
            for k in range(l * B, (l + 1) * B):
                g.add_edges_from(map(tuple, topo.edges(k).tolist()))
            if not nx.is_strongly_connected(g):
                ok = False
                break
        if ok:
            diam = 0
            for l in range(horizon // B):
                g = nx.DiGraph()
                g.add_nodes_from(range(topo.n))
                for k in range(l * B, (l + 1) * B):
                    g.add_edges_from(map(tuple, topo.edges(k).tolist()))
                diam = max(diam, nx.diameter(g) if topo.n > 1 else 0)
            return B, diam
    return None, None


@pytest.mark.parametrize("m", [1, 2, 3, 4, 5, 6])
def test_exponential_power_of_two_B_is_number_of_rounds(m):
    n = 2**m
    r = sv.check_mixing(graphs.exponential(n), horizon=8 * m)
    assert r.B == m
    # union over a period has offsets 1, 2, ..., 2^(m-1): n - 1 needs m hops
    assert r.diameter == m
    assert r.period == m


@pytest.mark.parametrize(
    "topo, B, diam",
    [
        (graphs.ring(9), 1, 8),
        (graphs.ring(9, bidirectional=True), 1, 4),
        (graphs.complete(7), 1, 1),
        (graphs.star(6), 1, 2),
        (graphs.hypercube(16), 1, 4),
        (graphs.torus(4, 5), 1, 4),
        (graphs.complete(1), 1, 0),
    ],
)
def test_static_known_B_and_diameter(topo, B, diam):
    r = sv.check_mixing(topo, horizon=20)
    assert (r.B, r.diameter) == (B, diam)


@settings(max_examples=25)
@given(sgst.topologies(min_n=1, max_n=10))
def test_B_and_diameter_match_networkx(topo):
    horizon = 12
    r = sv.check_mixing(topo, horizon=horizon, columns=4, starts=1)
    assert (r.B, r.diameter) == _brute_B(topo, horizon)


def test_disconnected_schedule_is_reported_and_strict_raises():
    g = nx.disjoint_union(nx.cycle_graph(3), nx.cycle_graph(3))
    topo = graphs.from_networkx(g)
    r = sv.check_mixing(topo, horizon=10)
    assert r.B is None and r.diameter is None
    assert not r.passed
    assert any("strongly connected" in v for v in r.violations)
    # products of a disconnected schedule do not contract to rank one
    assert r.q == 1.0
    with pytest.raises(sv.MixingAssumptionError, match="strongly connected"):
        sv.check_mixing(topo, horizon=10, strict=True)


# ---------------------------------------------------------------- contraction


def _dense_dev(mats, n_real, starts, horizon):
    """Independent deviation: dense products of every P^(k:s) (small N only)."""
    N = mats[0].shape[0]
    u = np.zeros(N)
    u[:n_real] = 1.0 / n_real
    phi, v = [], u
    for k in range(horizon):
        v = mats[k] @ v
        phi.append(v)
    dev = np.zeros(horizon)
    for s in starts:
        prod = np.eye(N)
        for t in range(horizon - s):
            prod = mats[s + t] @ prod
            dev[t] = max(dev[t], np.abs(prod - phi[s + t][:, None]).max())
    return dev


@settings(max_examples=20)
@given(
    n=st.integers(2, 9),
    seed=st.integers(0, 10**6),
    tau=st.integers(0, 2),
    kind=st.sampled_from(["random-peer", "erdos-renyi"]),
)
def test_contraction_matches_dense_products_and_envelope_holds(n, seed, tau, kind):
    topo = graphs.by_name(kind, n, seed=seed, p=0.4 if kind == "erdos-renyi" else None)
    horizon = 30
    S = mixing.mixing_schedule(topo, tau=tau, delay="random", seed=seed)
    mats = [S.matrix(k).toarray() for k in range(horizon)]
    starts = [0, 7]
    dev = assumptions.contraction(S.matrix, S.N, n, horizon, starts, np.arange(S.N))
    ref = _dense_dev(mats, n, starts, horizon)
    m = len(dev)
    assert np.allclose(dev, ref[:m], rtol=0, atol=64 * EPS * horizon)
    # past an early stop the dense deviation is at round-off level
    assert np.all(ref[m:] <= assumptions.ROUND_OFF_FLOOR * 4)
    q, C, _ = assumptions.fit_contraction(dev)
    if 0 < q < 1:
        t = np.arange(m)
        assert np.all(dev <= C * q**t * (1 + 1e-9) + assumptions.ROUND_OFF_FLOOR)


@pytest.mark.parametrize("n", [6, 8, 11])
def test_ring_rate_is_second_eigenvalue(n):
    # P = (I + S)/2 is normal with eigenvalues (1 + w^k)/2: |lambda_2| = cos(pi/n)
    r = sv.check_mixing(graphs.ring(n), horizon=400)
    assert r.q == pytest.approx(math.cos(math.pi / n), rel=1e-6)
    # measured contraction never beats the spectral bound of the theory; the
    # fitted slope is clear of round-off to ~1e-4 / (fit length >= 50) < 1e-5
    assert r.q <= r.q_theory * (1 + 1e-5)


@pytest.mark.parametrize("n", [2, 4, 16, 64, 256, 1024])
def test_exponential_period_product_exact_for_powers_of_two(n):
    r = sv.check_mixing(graphs.exponential(n), horizon=2 * int(math.log2(n)))
    assert r.period_product_error <= 64 * EPS * max(1, math.log2(n))


@pytest.mark.parametrize("n, lam", [(6, 0.217), (12, 0.209), (24, 0.207)])
def test_exponential_period_product_not_exact_otherwise(n, lam):
    r = sv.check_mixing(graphs.exponential(n), horizon=20)
    assert r.period_product_error > 1e-3
    assert r.period_product_lambda2 == pytest.approx(lam, abs=1e-3)


def test_measured_q_within_theory_for_regular_families():
    for topo in [graphs.exponential(12), graphs.torus(3, 4), graphs.ring(10, bidirectional=True),
                 graphs.bipartite_exponential(10)]:
        r = sv.check_mixing(topo, horizon=120)
        assert r.doubly_stochastic
        assert r.q <= r.q_theory * (1 + 1e-5), topo.name


def test_theory_constants_nedic_olshevsky_form():
    # general case: 1 - q = 1 - (1 - N^(-NB))^(1/B) ~ N^(-NB) / B
    q, C, delta, gap = assumptions.theory_constants(3, 2, doubly_stochastic=False)
    assert delta == pytest.approx(3.0 ** -6)
    assert q == pytest.approx((1 - 3.0 ** -6) ** 0.5, rel=1e-15)
    assert gap == pytest.approx(math.log10(1 - q), rel=1e-9)
    assert C == 4.0
    # astronomically small gaps are still reported exactly in log10
    q, _, _, gap = assumptions.theory_constants(4096, 12, doubly_stochastic=False)
    assert q == 1.0
    assert gap == pytest.approx(-4096 * 12 * math.log10(4096) - math.log10(12))
    # regular case uses 1/(4 N^3) and the spectral term
    q, _, delta, _ = assumptions.theory_constants(10, 1, doubly_stochastic=True, sigma2_max=0.5)
    assert (q, delta) == (0.5, 1.0)
    q, _, _, _ = assumptions.theory_constants(10, 2, doubly_stochastic=True, sigma2_max=1.0)
    assert q == pytest.approx((1 - 1 / 4000) ** 0.5)


# ---------------------------------------------------------------- weights, stochasticity


def test_weights_move_for_random_peer_and_not_for_regular():
    r = sv.check_mixing(graphs.random_peer(16, seed=3), horizon=50)
    assert not r.doubly_stochastic
    assert 0 < r.weight_min < 1
    # independent: propagate w by dense products
    w = np.ones(16)
    wmin = 1.0
    for k in range(50):
        w = mixing.push_matrix(graphs.random_peer(16, seed=3), k).toarray() @ w
        wmin = min(wmin, w.min())
    assert r.weight_min == pytest.approx(wmin, rel=1e-12)
    r = sv.check_mixing(graphs.exponential(10), horizon=50)
    assert r.doubly_stochastic and r.weight_min == pytest.approx(1.0, abs=1e-12)


def test_user_matrix_violations_are_measured():
    bad_sum = np.array([[0.5, 0.3], [0.4, 0.7]])
    r = sv.check_mixing(bad_sum, horizon=5)
    assert not r.column_stochastic
    assert r.column_sum_error == pytest.approx(0.1)
    assert "column 0 of P^(0) sums to 0.9" in r.violations[0]
    zero_diag = np.array([[0.0, 0.3], [1.0, 0.7]])
    r = sv.check_mixing(zero_diag, horizon=5)
    assert r.column_stochastic and not r.positive_self_weights
    assert any("self-weights must be > 0" in v for v in r.violations)
    with pytest.raises(sv.MixingAssumptionError, match=r"P\^\(\d+\)\[0, 0\] = 0"):
        sv.check_mixing(zero_diag, horizon=5, strict=True)


def test_bad_arguments_name_parameter_and_value():
    with pytest.raises(ValueError, match="horizon must be an integer >= 1, got 0"):
        sv.check_mixing(graphs.ring(4), horizon=0)
    with pytest.raises(ValueError, match="tau must be an integer >= 0, got -1"):
        sv.check_mixing(graphs.ring(4), tau=-1)
    with pytest.raises(ValueError, match="delay must be one of"):
        sv.check_mixing(graphs.ring(4), tau=1, delay="sometimes")
    with pytest.raises(ValueError, match="must be a square matrix, got shape"):
        sv.check_mixing(np.ones((2, 3)) / 2)
    with pytest.raises(ValueError, match="must be finite"):
        sv.check_mixing(np.array([[np.nan, 0.5], [1.0, 0.5]]))
    with pytest.raises(TypeError, match="source must be"):
        sv.check_mixing("ring")


# ---------------------------------------------------------------- delays


@pytest.mark.parametrize("delay", ["fixed", "random"])
def test_augmented_report(delay):
    r = sv.check_mixing(graphs.random_peer(6, seed=1), tau=2, delay=delay, horizon=60, seed=4)
    assert r.rows == 18 and r.tau == 2
    assert r.column_stochastic and r.nonnegative and r.positive_self_weights
    assert r.B is not None and r.diameter is not None
    assert 0 < r.q < 1
    assert 0 < r.weight_min <= 1


def test_fixed_delay_slows_contraction():
    q0 = sv.check_mixing(graphs.ring(8), horizon=200).q
    q2 = sv.check_mixing(graphs.ring(8), tau=2, horizon=200).q
    assert q0 < q2 < 1


# ---------------------------------------------------------------- relabelling


@settings(max_examples=15)
@given(st.data())
def test_relabelling_does_not_change_the_report(data):
    topo = data.draw(sgst.topologies(min_n=2, max_n=9, faults=False))
    perm = data.draw(sgst.permutations(topo.n))
    a = sv.check_mixing(topo, horizon=20)
    b = sv.check_mixing(topo.relabel(perm), horizon=20)
    assert (a.B, a.diameter, a.period, a.doubly_stochastic) == (b.B, b.diameter, b.period, b.doubly_stochastic)
    assert a.weight_min == pytest.approx(b.weight_min, rel=1e-12)
    # the measured deviations are the same up to round-off ...
    Sa, Sb = mixing.mixing_schedule(topo), mixing.mixing_schedule(topo.relabel(perm))
    cols = np.arange(topo.n)
    da = assumptions.contraction(Sa.matrix, topo.n, topo.n, 20, [0, 5], cols)
    db = assumptions.contraction(Sb.matrix, topo.n, topo.n, 20, [0, 5], cols)
    m = min(len(da), len(db))
    assert np.allclose(da[:m], db[:m], rtol=0, atol=64 * EPS * 20)
    # ... and so is q whenever round-off does not move the fit window's edge: points
    # fitted sit >= FIT_MARGIN * floor above round-off, so each log-deviation moves
    # by <= 1/FIT_MARGIN and the slope by <= 2/FIT_MARGIN / (window length)
    if a.q_fit_window == b.q_fit_window and a.q_fit_window is not None:
        t0, t1 = a.q_fit_window
        rel = 2.0 / assumptions.FIT_MARGIN / max(1, t1 - t0)
        assert a.q == pytest.approx(b.q, rel=rel, abs=1e-12)


def test_report_to_dict_is_json_ready():
    import json

    r = sv.check_mixing(graphs.exponential(8), horizon=12)
    d = json.loads(json.dumps(r.to_dict()))
    for key in ["column_stochastic", "nonnegative", "min_positive_entry", "B", "diameter", "q", "C",
                "q_theory", "C_theory", "weight_min", "period", "period_product_error"]:
        assert key in d
    assert d["B"] == 3 and d["passed"] is True


@settings(max_examples=20)
@given(sgst.topologies(min_n=2, max_n=40, faults=False), st.integers(0, 100))
def test_diameter_bounds_bracket_exact(topo, seed):
    g = assumptions._union_graph(topo.n, [topo.edges(k) for k in range(6)])
    if not graphs.is_strongly_connected(topo.n, np.concatenate([topo.edges(k) for k in range(6)])):
        return
    exact = assumptions.diameter(g)
    lo, hi = assumptions.diameter_bounds(g, samples=4, seed=seed)
    assert lo <= exact <= hi <= 2 * exact


def test_large_random_schedule_reports_diameter_upper_bound():
    topo = graphs.random_peer(4096, seed=0)
    r = sv.check_mixing(topo, horizon=30, columns=8, starts=1)
    assert r.B is not None and not r.diameter_exact
    # the bound is never below the eccentricity of node 0 in the first window
    g = assumptions._union_graph(4096, [topo.edges(k) for k in range(r.B)])
    from scipy.sparse.csgraph import shortest_path

    assert r.diameter >= shortest_path(g, unweighted=True, indices=[0]).max()


def test_repeated_edges_never_cancel():
    # a window union repeats an edge once per step; counts must not wrap around
    e = np.array([[0, 1]] * 256 + [[1, 0]] * 300)
    assert graphs.is_strongly_connected(2, e)
    g = assumptions._union_graph(2, [e])
    g.eliminate_zeros()
    assert g.nnz == 2 and assumptions.diameter(g) == 1
