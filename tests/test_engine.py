"""Tests of sgpverify.engine against independent computations:
the dense augmented recursion (THEORY.md section 3), the per-node message loop
of sgpverify.testing.reference, plain SGD, and exact averaging."""

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

import sgpverify as sv
from sgpverify import graphs, mixing, problems
from sgpverify.testing import strategies as sgst
from sgpverify.testing.reference import reference_sgp

EPS = np.finfo(float).eps


class Noisy:
    """Linear gradients plus unit Gaussian noise: cheap, and weights still move."""

    name = "Noisy"

    def __init__(self, n, d, c=0.3, sigma=1.0):
        self.n_nodes, self.dim = n, d
        self.c, self.sigma = c, sigma
        self.L, self.sigma2, self.zeta2, self.f_lower = c, sigma**2, 0.0, 0.0

    def grad(self, z, rng):
        return self.c * z + self.sigma * rng.standard_normal(z.shape)

    def full_grad(self, x):
        return self.c * np.asarray(x)

    def value(self, x):
        return 0.5 * self.c * np.sum(np.asarray(x) ** 2, axis=-1)


def dense_augmented(problem, S, n_iter, gamma, x0, seed, send_before_step=False):
    """Xt^{k+1} = Pt^(k) (Xt^k - gamma Gt^k) with dense augmented matrices."""
    n, d, N = problem.n_nodes, problem.dim, S.N
    Xt = np.zeros((N, d))
    Xt[:n] = x0
    wt = np.zeros(N)
    wt[:n] = 1.0
    rng = np.random.default_rng(np.random.SeedSequence(seed).spawn(1)[0])
    for k in range(n_iter):
        G = np.zeros((N, d))
        G[:n] = problem.grad(Xt[:n] / wt[:n, None], rng)
        Pt = S.matrix(k).toarray()
        if send_before_step:
            Xt = Pt @ Xt - gamma * G
        else:
            Xt = Pt @ (Xt - gamma * G)
        wt = Pt @ wt
    return Xt, wt


@pytest.mark.parametrize("tau", [0, 1, 2, 3])
@pytest.mark.parametrize("delay", ["fixed", "random", "link"])
@pytest.mark.parametrize("kind", ["random-peer", "erdos-renyi"])
def test_engine_equals_augmented_recursion(tau, delay, kind):
    n, d, K, gamma = 7, 3, 30, 0.1
    topo = graphs.by_name(kind, n, seed=11, p=0.3)
    if delay == "link":
        delay = np.random.default_rng(tau).integers(0, tau + 1, size=(n, n))
    prob = Noisy(n, d)
    x0 = np.random.default_rng(2).normal(size=(n, d))
    tr = sv.simulate(prob, topo, step_size=gamma, n_iter=K, x0=x0, tau=tau, delay=delay, seed=5)
    S = mixing.mixing_schedule(topo, tau=tau, delay=delay, seed=5)
    Xt, wt = dense_augmented(prob, S, K, gamma, x0, seed=5)
    scale = np.abs(Xt).max() + 1
    assert np.allclose(tr.x, Xt[:n], rtol=0, atol=64 * EPS * K * scale)
    assert np.allclose(tr.w, wt[:n], rtol=0, atol=64 * EPS * K)
    # push-sum weights really moved (non-regular digraph)
    assert np.ptp(tr.w) > 0.05
    # final xbar counts the buffers: same as the augmented state's total mass
    xbar = Xt.sum(axis=0) / n
    assert tr.grad_norm_sq[-1] == pytest.approx(np.sum(prob.full_grad(xbar) ** 2), rel=1e-9)


@pytest.mark.parametrize("tau", [0, 1, 2])
def test_send_before_step_equals_its_recursion(tau):
    n, d, K, gamma = 6, 2, 25, 0.05
    topo = graphs.random_peer(n, seed=4)
    prob = Noisy(n, d)
    x0 = np.random.default_rng(3).normal(size=(n, d))
    tr = sv.simulate(prob, topo, step_size=gamma, n_iter=K, x0=x0, tau=tau, seed=1, send_before_step=True)
    Xt, wt = dense_augmented(prob, mixing.mixing_schedule(topo, tau=tau), K, gamma, x0, 1, send_before_step=True)
    assert np.allclose(tr.x, Xt[:n], rtol=0, atol=64 * EPS * K * (np.abs(Xt).max() + 1))
    assert tr.mass_error.max() <= 64 * EPS * K * (np.abs(Xt).max() + 1)


@pytest.mark.parametrize(
    "kw",
    [
        {},
        {"tau": 2, "delay": "random"},
        {"tau": 1, "send_before_step": True},
        {"momentum": 0.9},
        {"momentum": 0.9, "nesterov": True, "tau": 1},
    ],
)
def test_engine_equals_per_node_message_loop(kw):
    n, d, K = 9, 4, 20
    prob = problems.QuadraticCosine(n, d, sigma=0.5, seed=1)
    topo = graphs.with_link_failures(graphs.random_peer(n, seed=2), 0.2, seed=3)
    x0 = np.linspace(-1, 1, d)
    ref = reference_sgp(prob, topo, step_size=0.05, n_iter=K, x0=x0, seed=9, **kw)
    tr = sv.simulate(prob, topo, step_size=0.05, n_iter=K, x0=x0, seed=9, **kw)
    assert np.allclose(tr.z, ref["z"], rtol=0, atol=1e3 * EPS)
    assert np.allclose(tr.w, ref["w"], rtol=0, atol=1e3 * EPS)


@settings(max_examples=30)
@given(
    topo=sgst.topologies(min_n=1, max_n=12),
    tau=st.integers(0, 3),
    delay=st.sampled_from(["fixed", "random"]),
    seed=st.integers(0, 2**31),
    before=st.booleans(),
)
def test_mass_and_weight_conserved(topo, tau, delay, seed, before):
    prob = Noisy(topo.n, 3)
    K = 15
    tr = sv.simulate(prob, topo, step_size=0.2, n_iter=K, x0=np.ones(3), tau=tau, delay=delay, seed=seed,
                     send_before_step=before)
    # round-off in the scale of the applied steps gamma * (noise + c |z|): on
    # schedules that are not strongly connected a node that never receives has
    # w -> 0 and z = x / w grows geometrically, and so does the scale
    scale = 1 + K * 0.2 * (5 + prob.c * np.abs(tr.z).max())
    assert tr.mass_error.max() <= 64 * EPS * K * scale * topo.n
    assert tr.weight_error.max() <= 64 * EPS * K * topo.n
    assert tr.weight_min.min() > 0


def test_n1_is_plain_sgd():
    prob = problems.QuadraticCosine(1, 5, sigma=0.3, seed=0)
    K, gamma = 40, 0.1
    tr = sv.simulate(prob, graphs.exponential(1), step_size=gamma, n_iter=K, x0=np.ones(5), seed=4)
    rng = np.random.default_rng(np.random.SeedSequence(4).spawn(1)[0])
    x = np.ones((1, 5))
    for _ in range(K):
        x = x - gamma * prob.grad(x, rng)
    # equal up to the rounding of the fused x + (-gamma) g (BLAS axpy may use FMA)
    assert np.allclose(tr.z, x, rtol=4 * EPS * K, atol=0)
    assert np.all(tr.consensus == 0.0)


def test_complete_graph_sgp_equals_allreduce():
    prob = problems.NonconvexLogistic(8, 5, seed=1)
    kw = dict(step_size=0.3, n_iter=60, x0=np.full(5, 0.5), seed=2)
    a = sv.simulate(prob, graphs.complete(8), **kw)
    b = sv.simulate(prob, graphs.complete(8), algorithm="allreduce", **kw)
    assert np.allclose(a.z, b.z, rtol=0, atol=64 * EPS * 60)
    assert np.allclose(a.value, b.value, rtol=1e-12)


def test_local_sgd_averages_every_H_and_dpsgd_keeps_weights():
    prob = problems.QuadraticCosine(6, 3, sigma=0.1, seed=0)
    tr = sv.simulate(prob, graphs.ring(6), step_size=0.1, n_iter=20, algorithm="local-sgd", average_every=5)
    c = tr.consensus
    assert np.all(c[tr.iterations % 5 == 0] <= 64 * EPS)
    assert np.all(c[tr.iterations % 5 != 0] > 0)
    tr = sv.simulate(prob, graphs.ring(6), step_size=0.1, n_iter=20, algorithm="dpsgd")
    assert np.all(tr.w == 1.0) and tr.mass_error.max() < 1e-13


def test_relabelling_permutes_the_trace():
    n, d = 7, 3
    prob = problems.QuadraticCosine(n, d, sigma=0.0, seed=3)
    perm = np.random.default_rng(0).permutation(n)

    class Permuted(problems.QuadraticCosine):
        pass

    pprob = Permuted(n, d, sigma=0.0, seed=3)
    inv = np.argsort(perm)
    object.__setattr__(pprob, "b", prob.b[inv])  # node perm[i] gets node i's data
    topo = graphs.random_peer(n, seed=1)
    x0 = np.random.default_rng(1).normal(size=(n, d))
    a = sv.simulate(prob, topo, step_size=0.1, n_iter=30, x0=x0, tau=1)
    b = sv.simulate(pprob, topo.relabel(perm), step_size=0.1, n_iter=30, x0=x0[inv], tau=1)
    assert np.allclose(b.z[perm], a.z, rtol=0, atol=1e3 * EPS)
    assert np.allclose(b.consensus, a.consensus, rtol=1e-10, atol=1e-14)


def test_replicas_are_independent_and_reproducible():
    prob = problems.QuadraticCosine(5, 4, sigma=1.0, seed=0)
    kw = dict(step_size=0.1, n_iter=15)
    r3 = sv.simulate(prob, graphs.random_peer(5, seed=0), replicas=3, seed=8, **kw)
    again = sv.simulate(prob, graphs.random_peer(5, seed=0), replicas=3, seed=8, **kw)
    r1 = sv.simulate(prob, graphs.random_peer(5, seed=0), replicas=1, seed=8, **kw)
    assert r3.z.shape == (3, 5, 4) and r3.consensus.shape == (16, 3)
    assert np.array_equal(r3.z, again.z)  # same seed, same bits
    assert np.array_equal(r3.z[0], r1.z)  # replica r uses stream spawn(R)[r]
    assert not np.allclose(r3.z[0], r3.z[1]) and not np.allclose(r3.z[1], r3.z[2])
    other = sv.simulate(prob, graphs.random_peer(5, seed=0), replicas=1, seed=9, **kw)
    assert not np.allclose(other.z, r1.z)


def test_divergence_raises_with_iteration_node_and_step():
    prob = problems.QuadraticCosine(4, 2, sigma=0.0, seed=0)
    with pytest.raises(sv.SimulationDivergedError, match=r"node \d+ is not finite at iteration \d+ \(step_size = 1000"):
        sv.simulate(prob, graphs.ring(4), step_size=1000.0, n_iter=400, x0=np.ones(2))


def test_record_every_and_series():
    prob = problems.DoubleWell(4, 2, seed=0)
    tr = sv.simulate(prob, graphs.exponential(4), step_size=0.1, n_iter=23, record_every=5)
    assert tr.iterations.tolist() == [0, 5, 10, 15, 20, 23]
    d = tr.to_dict()
    import json

    json.dumps(d)
    for key in ["consensus", "grad_norm_sq", "value", "mass_error", "weight_error"]:
        assert key in d["final"] and len(d["series"][key]) == 6


@pytest.mark.parametrize(
    "kw, exc, msg",
    [
        (dict(step_size=0.0), ValueError, "step_size must be a number > 0.0, got 0.0"),
        (dict(n_iter=-1), ValueError, "n_iter must be an integer >= 0, got -1"),
        (dict(tau=-2), ValueError, "tau must be an integer >= 0, got -2"),
        (dict(algorithm="gossip"), ValueError, "algorithm must be one of"),
        (dict(algorithm="dpsgd", tau=1), ValueError, "tau applies to algorithm 'sgp' only"),
        (dict(x0=np.ones(7)), ValueError, r"x0 must have shape \(3,\) or \(4, 3\), got \(7,\)"),
        (dict(replicas=0), ValueError, "replicas must be an integer >= 1, got 0"),
        (dict(momentum=1.0), ValueError, r"momentum must be a number in \[0.0, 1.0\), got 1.0"),
        (dict(record_every=0), ValueError, "record_every must be an integer >= 1, got 0"),
    ],
)
def test_bad_arguments(kw, exc, msg):
    prob = problems.QuadraticCosine(4, 3)
    args = dict(step_size=0.1, n_iter=5)
    args.update(kw)
    with pytest.raises(exc, match=msg):
        sv.simulate(prob, graphs.ring(4), **args)


def test_topology_size_mismatch_and_bad_problem():
    with pytest.raises(ValueError, match="topology has 5 nodes but problem.n_nodes = 4"):
        sv.simulate(problems.QuadraticCosine(4, 3), graphs.ring(5), step_size=0.1, n_iter=1)
    with pytest.raises(TypeError, match="missing attribute 'n_nodes'"):
        sv.simulate(object(), graphs.ring(5), step_size=0.1, n_iter=1)
