"""Tests of sgpverify.engine against independent computations:
the dense augmented recursion (docs/theory.md section 1b), the per-node message loop
of sgpverify.testing.reference, plain SGD, and exact averaging."""

import numpy as np
import pytest
from _tolerances import EPS, roundoff
from hypothesis import given, settings
from hypothesis import strategies as st

import sgpverify as sv
from sgpverify import graphs, mixing, problems
from sgpverify.testing import strategies as sgst
from sgpverify.testing.reference import reference_sgp

# step_size / w_min > 1/L is reported by a warning (tested on its own below);
# the other tests run short, unconverged schedules on purpose
pytestmark = pytest.mark.filterwarnings("ignore::sgpverify.EffectiveStepWarning")


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
    # the same arithmetic in another order: K steps' round-off at the size of the state
    assert np.allclose(tr.z, ref["z"], rtol=0, atol=roundoff(1 + np.abs(ref["z"]).max(), K))
    assert np.allclose(tr.w, ref["w"], rtol=0, atol=roundoff(1 + np.abs(ref["w"]).max(), K))


@settings(max_examples=30)
@given(
    topo=sgst.topologies(min_n=1, max_n=12),
    tau=st.integers(0, 3),
    delay=st.sampled_from(["fixed", "random"]),
    seed=st.integers(0, 2**31),
    before=st.booleans(),
)
def test_mass_and_weight_conserved_with_delays_and_send_before_step(topo, tau, delay, seed, before):
    prob = Noisy(topo.n, 3)
    K = 15
    try:
        tr = sv.simulate(
            prob, topo, step_size=0.2, n_iter=K, x0=np.ones(3), tau=tau, delay=delay, seed=seed, send_before_step=before
        )
    except sv.MixingAssumptionError as exc:
        # the engine refuses a schedule whose weights collapse: only one not strongly connected over the run
        assert not graphs.is_strongly_connected(topo.n, topo.union(0, K)), exc
        return
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
    # w is never gossiped in D-PSGD (set to 1); the mass sums n nodes over K steps
    # w == 1 exactly: D-PSGD sets the weights and never gossips them
    assert np.all(tr.w == 1.0) and tr.mass_error.max() <= roundoff(1 + np.abs(tr.x).max(), 20 * 6)


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
    assert np.allclose(b.z[perm], a.z, rtol=0, atol=roundoff(1 + np.abs(a.z).max(), 30))
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


# ---------------------------------------------------------------- every engine path vs an independent computation


class Aperiodic(graphs.Topology):
    """The same schedule presented without a period (so that nothing is cached),
    answering through the user-subclass path (validated edges)."""

    def __init__(self, base, shuffle=False):
        self.base, self.n, self.period, self.name = base, base.n, None, f"aperiodic {base.name}"
        self.shuffle = shuffle

    def _edges(self, k):
        e = np.array(self.base.edges(k))
        return e[::-1].copy() if self.shuffle else e  # reversed: unsorted


class StepDelay(mixing.DelayModel):
    """A user delay model that depends on k (but does not say it is random)."""

    def __init__(self, tau):
        self.tau, self.name = tau, f"step(tau={tau})"

    def edge_delays(self, k, src, dst):
        return (np.asarray(src) + np.asarray(dst) + k) % (self.tau + 1)


def _periodic_source(kind, n):
    if kind == "exponential":
        return graphs.exponential(n)
    if kind == "bipartite":
        return graphs.bipartite_exponential(n)
    # not regular: weights move even without delays
    return graphs.PeriodicTopology(
        n,
        [
            [[0, 1], [0, 2], [1, 3], [3, 0], [2, 4], [4, 5], [5, 0]],
            [[1, 0], [2, 1], [3, 2], [4, 3], [5, 4], [0, 5], [0, 3]],
        ],
        name="irregular",
    )


@pytest.mark.parametrize("kind", ["exponential", "bipartite", "irregular"])
@pytest.mark.parametrize("delay", ["random", "fixed", "link", "step"])
def test_period_cache_never_changes_a_result(kind, delay):
    n, d, K, tau, gamma = 6, 3, 24, 2, 0.1
    topo = _periodic_source(kind, n)
    if delay == "link":
        delay = np.random.default_rng(0).integers(0, tau + 1, size=(n, n))
    elif delay == "step":
        delay = StepDelay(tau)
    prob = Noisy(n, d)
    x0 = np.random.default_rng(1).normal(size=(n, d))
    kw = dict(step_size=gamma, n_iter=K, x0=x0, tau=tau, delay=delay, seed=3)
    a = sv.simulate(prob, topo, **kw)
    b = sv.simulate(prob, Aperiodic(topo), **kw)
    for key in ("x", "w", "consensus", "grad_norm_sq", "weight_min"):
        assert np.array_equal(getattr(a, key), getattr(b, key)), key
    # and both equal the dense augmented recursion
    S = mixing.mixing_schedule(topo, tau=tau, delay=delay, seed=3)
    Xt, wt = dense_augmented(prob, S, K, gamma, x0, seed=3)
    assert np.allclose(a.x, Xt[:n], rtol=0, atol=64 * EPS * K * (np.abs(Xt).max() + 1))
    assert np.allclose(a.w, wt[:n], rtol=0, atol=64 * EPS * K)


def _user_matrices(n, m, seed):
    """m non-symmetric column-stochastic matrices with positive diagonals and unequal row sums."""
    rng = np.random.default_rng(seed)
    mats = []
    for _ in range(m):
        W = np.where(rng.random((n, n)) < 0.4, rng.uniform(0.1, 1.0, (n, n)), 0.0)
        W[np.arange(n), np.arange(n)] = rng.uniform(0.2, 1.0, n)
        W /= W.sum(axis=0, keepdims=True)
        mats.append(W)
    return mats


@pytest.mark.parametrize("tau, delay", [(0, "fixed"), (2, "random"), (2, "link"), (1, "fixed")])
@pytest.mark.parametrize("before", [False, True])
def test_explicit_matrices_equal_augmented_recursion(tau, delay, before):
    n, d, K, gamma = 6, 3, 20, 0.1
    mats = _user_matrices(n, 3, seed=tau)
    assert not np.allclose(mats[0], mats[0].T) and np.ptp(mats[0].sum(axis=1)) > 0.1
    if delay == "link":
        delay = np.random.default_rng(5).integers(0, tau + 1, size=(n, n))
    prob = Noisy(n, d)
    x0 = np.random.default_rng(2).normal(size=(n, d))
    tr = sv.simulate(
        prob, mats, step_size=gamma, n_iter=K, x0=x0, tau=tau, delay=delay, seed=4, send_before_step=before
    )
    S = mixing.mixing_schedule(mats, tau=tau, delay=delay, seed=4)
    Xt, wt = dense_augmented(prob, S, K, gamma, x0, seed=4, send_before_step=before)
    scale = np.abs(Xt).max() + 1
    assert np.allclose(tr.x, Xt[:n], rtol=0, atol=64 * EPS * K * scale)
    assert np.allclose(tr.w, wt[:n], rtol=0, atol=64 * EPS * K)
    assert np.ptp(tr.w) > 0.05
    assert tr.mass_error.max() <= 64 * EPS * K * scale * n
    # the same matrices, unsorted and with split duplicate entries (COO), give the same bits
    import scipy.sparse as sparse

    coo = []
    for W in mats:
        r, c = np.nonzero(W)
        order = np.random.default_rng(0).permutation(len(r))
        r, c, v = r[order], c[order], W[r[order], c[order]]
        coo.append(sparse.coo_array((np.concatenate([v / 2, v / 2]), (np.tile(r, 2), np.tile(c, 2))), shape=(n, n)))
    tr2 = sv.simulate(
        prob, coo, step_size=gamma, n_iter=K, x0=x0, tau=tau, delay=delay, seed=4, send_before_step=before
    )
    assert np.allclose(tr2.x, tr.x, rtol=0, atol=64 * EPS * K * scale)


@settings(max_examples=25)
@given(P=sgst.column_stochastic_matrices(min_n=2, max_n=8), data=st.data())
def test_explicit_matrix_with_delays_property(P, data):
    n = P.shape[0]
    tau, D = data.draw(sgst.delay_patterns(P, max_tau=3))
    prob = Noisy(n, 2)
    x0 = np.arange(2 * n, dtype=float).reshape(n, 2) / n
    K = 10
    try:
        tr = sv.simulate(prob, P, step_size=0.1, n_iter=K, x0=x0, tau=tau, delay=D, seed=1)
    except sv.MixingAssumptionError:  # a weight underflowed: P must really be reducible
        r, c = np.nonzero(P)
        assert not graphs.is_strongly_connected(n, np.stack([c[r != c], r[r != c]], 1))
        return
    Xt, wt = dense_augmented(prob, mixing.mixing_schedule(P, tau=tau, delay=D), K, 0.1, x0, seed=1)
    scale = np.abs(Xt).max() + 1
    assert np.allclose(tr.x, Xt[:n], rtol=0, atol=64 * EPS * K * scale * n)
    assert np.allclose(tr.w, wt[:n], rtol=0, atol=64 * EPS * K * n)


@pytest.mark.parametrize(
    "kw",
    [
        {"tau": 2, "delay": "random"},
        {"tau": 1, "momentum": 0.9, "nesterov": True},
        {"send_before_step": True, "tau": 1},
        {},
    ],
)
@pytest.mark.parametrize("loss", [False, True])
def test_recorded_series_equal_per_node_reference(kw, loss):
    n, d, K, every = 7, 3, 23, 3
    prob = problems.QuadraticCosine(n, d, sigma=0.5, seed=2)
    topo = graphs.with_link_failures(graphs.random_peer(n, seed=5), 0.2, seed=1)
    if loss:
        topo = graphs.with_message_loss(topo, 0.2, seed=7)
    x0 = np.random.default_rng(0).normal(size=(n, d))
    ref = reference_sgp(prob, topo, step_size=0.05, n_iter=K, x0=x0, seed=6, record_every=every, **kw)
    tr = sv.simulate(prob, topo, step_size=0.05, n_iter=K, x0=x0, seed=6, record_every=every, **kw)
    s = ref["series"]
    assert tr.iterations.tolist() == s["iterations"].tolist() == [0, 3, 6, 9, 12, 15, 18, 21, 23]
    assert np.ptp(s["weight_min"]) > 0.1  # the weights really move
    tol = roundoff(1 + np.abs(ref["z"]).max() + np.abs(s["lost"]).max(), K)
    for key in ("consensus", "grad_norm_sq", "value", "weight_min", "weight_max"):
        assert np.allclose(getattr(tr, key), s[key], rtol=1e-10, atol=tol), key
    assert np.allclose(tr.weight_error, np.abs(s["weight"] - n), rtol=0, atol=tol)
    assert np.allclose(tr.mass_lost, np.abs(s["lost"]).max(axis=1), rtol=0, atol=tol)
    assert np.allclose(tr.z, ref["z"], rtol=0, atol=tol)
    if loss:
        assert tr.mass_lost[-1] > 1e-3 and tr.weight_lost[-1] > 1e-3
        assert tr.weight_lost[-1] == pytest.approx(ref["lost_w"], abs=tol)
    else:
        assert np.all(tr.mass_lost == 0) and np.all(tr.weight_lost == 0)


@pytest.mark.parametrize("kw", [{}, {"tau": 2, "delay": "random"}, {"momentum": 0.9, "nesterov": True}])
def test_large_array_branch_equals_small_array_branch(monkeypatch, kw):
    from sgpverify.engine import step

    n, d, K = 6, 5, 15
    prob = Noisy(n, d)
    topo = graphs.random_peer(n, seed=1)
    args = dict(step_size=0.1, n_iter=K, x0=np.ones(d), seed=2, replicas=2, **kw)
    small = sv.simulate(prob, topo, **args)
    monkeypatch.setattr(step, "BLAS_MIN", 1)  # every array takes the large-array branch
    monkeypatch.setattr(step, "AXPY_BLOCK", 7)  # in several blocks, the last one partial
    large = sv.simulate(prob, topo, **args)
    for key in ("x", "w", "consensus", "value"):
        assert np.array_equal(getattr(small, key), getattr(large, key)), key
    assert large.mass_error.max() <= 64 * EPS * K * (1 + np.abs(large.x).max()) * n


def test_replica_zero_bit_equal_across_replica_counts_on_large_arrays():
    from sgpverify.engine import step

    n, d, K = 8, 4096, 4  # R = 8: n R d = 2^18 reaches the large-array branch; R = 1 does not
    assert n * 8 * d >= step.BLAS_MIN > n * d
    prob = OwnNoisy(n, d)  # one stream per replica
    topo = graphs.random_peer(n, seed=0)
    x0 = np.linspace(-1, 1, d)
    kw = dict(step_size=0.1, n_iter=K, x0=x0, tau=1, delay="random", momentum=0.5)
    r8 = sv.simulate(prob, topo, replicas=8, seed=3, **kw)
    r1 = sv.simulate(prob, topo, replicas=1, seed=3, **kw)
    assert np.array_equal(r8.z[0], r1.z) and np.array_equal(r8.w[0], r1.w)
    for key in sv.Trace.SERIES:  # every recorded series too
        assert np.array_equal(getattr(r8, key)[:, 0], getattr(r1, key)), key
    ref = reference_sgp(prob, topo, step_size=0.1, n_iter=K, x0=x0, tau=1, delay="random", seed=3, momentum=0.5)
    assert np.allclose(r1.z, ref["z"], rtol=0, atol=roundoff(1 + np.abs(ref["z"]).max(), K))


@pytest.mark.parametrize("d", [1, 3])
def test_replica_zero_bit_equal_in_records_for_any_dimension(d):
    n = 9  # at least 8 nodes: numpy sums a single contiguous column pairwise
    prob = OwnNoisy(n, d)  # one stream per replica
    kw = dict(step_size=0.1, n_iter=6, x0=np.linspace(1, 2, d), tau=1, delay="random", seed=2)
    r5 = sv.simulate(prob, graphs.random_peer(n, seed=1), replicas=5, **kw)
    r1 = sv.simulate(prob, graphs.random_peer(n, seed=1), replicas=1, **kw)
    assert np.array_equal(r5.z[0], r1.z)
    for key in ("consensus", "grad_norm_sq", "value", "weight_error"):
        assert np.array_equal(getattr(r5, key)[:, 0], getattr(r1, key)), key


@pytest.mark.parametrize("nesterov", [False, True])
@pytest.mark.parametrize("tau", [0, 2])
def test_momentum_mass_bookkeeping(nesterov, tau):
    n, d, K, gamma = 8, 3, 40, 0.05
    prob = problems.QuadraticCosine(n, d, sigma=1.0, seed=0)
    topo = graphs.random_peer(n, seed=3)
    x0 = np.full(d, 2.0)
    kw = dict(step_size=gamma, n_iter=K, x0=x0, momentum=0.9, nesterov=nesterov, tau=tau, delay="random", seed=1)
    tr = sv.simulate(prob, topo, **kw)
    ref = reference_sgp(prob, topo, **kw)
    # the reference's totals obey the invariant with the steps after momentum
    total = ref["x"].sum(axis=0) + ref["in_flight"]
    scale = 1 + np.abs(ref["x"]).max() * n + gamma * np.abs(ref["applied"]).max()
    assert np.allclose(total, n * x0 - gamma * ref["applied"], rtol=0, atol=64 * EPS * K * scale)
    assert tr.mass_error.max() <= 64 * EPS * K * scale
    assert np.allclose(tr.z, ref["z"], rtol=0, atol=roundoff(1 + np.abs(ref["z"]).max(), K))


FAULTS = (None, "link-failures", "stragglers", "message-loss")


@settings(max_examples=120)
@given(
    topo=sgst.topologies(min_n=2, max_n=10, faults=False),
    fault=st.sampled_from(FAULTS + FAULTS[1:]),
    tau=st.integers(0, 3),
    delay=st.sampled_from(["fixed", "random", "link"]),
    algorithm=st.sampled_from(["sgp"] * 4 + ["dpsgd", "local-sgd"]),
    momentum=st.sampled_from([0.0, 0.0, 0.9]),
    nesterov=st.booleans(),
    replicas=st.integers(1, 3),
    record_every=st.integers(1, 4),
    seed=st.integers(0, 2**31),
    before=st.booleans(),
)
def test_mass_and_weight_conserved(
    topo, fault, tau, delay, algorithm, momentum, nesterov, replicas, record_every, seed, before
):
    from hypothesis import event

    n = topo.n
    assert n >= 2
    if fault == "link-failures":
        topo = graphs.with_link_failures(topo, 0.3, seed=seed)
    elif fault == "stragglers":
        topo = graphs.with_stragglers(topo, [0, n - 1], every=3)
    elif fault == "message-loss" and algorithm == "sgp":
        topo = graphs.with_message_loss(topo, 0.2, seed=seed)
    if algorithm != "sgp":
        tau, before = 0, False
    if delay == "link":
        delay = np.random.default_rng(seed).integers(0, tau + 1, size=(n, n))
    event(f"delays and a fault together: {tau > 0 and fault is not None}")
    event(f"algorithm {algorithm}")
    event(f"replicas > 1: {replicas > 1}; momentum: {momentum > 0}; record_every > 1: {record_every > 1}")
    prob = Noisy(n, 3)
    K = 15
    try:
        tr = sv.simulate(
            prob,
            topo,
            step_size=0.2,
            n_iter=K,
            x0=np.ones(3),
            tau=tau,
            delay=delay,
            seed=seed,
            send_before_step=before,
            algorithm=algorithm,
            momentum=momentum,
            nesterov=nesterov,
            replicas=replicas,
            record_every=record_every,
        )
    except sv.MixingAssumptionError as exc:
        # a weight underflowed: only allowed when the schedule really is not strongly connected
        import re

        m = re.search(r"iterations (\d+)\.\.(\d+)", str(exc))
        a, b = (0, topo.period) if m is None else (int(m[1]), int(m[2]) + 1)
        assert not graphs.is_strongly_connected(n, topo.union(a, b))
        event("weight underflow on a schedule that is not strongly connected: reported")
        return
    assert tr.iterations.tolist() == sorted(set(range(0, K, record_every)) | {K})
    # round-off in the scale of the applied steps gamma * (noise + c |z|) (momentum sums up to 10 of them)
    scale = (1 + K * 0.2 * (5 + prob.c * np.abs(tr.z).max())) * (10 if momentum else 1) * replicas
    lost = tr.mass_lost if fault == "message-loss" else 0.0
    assert np.all(np.abs(tr.mass_error - lost) <= 64 * EPS * K * scale * n)
    wlost = tr.weight_lost if fault == "message-loss" else 0.0
    assert np.all(np.abs(tr.weight_error - wlost) <= 64 * EPS * K * n)
    assert tr.weight_min.min() > 0


def test_message_loss_is_seen_by_the_mass_check():
    # (lost weight drains every node: over long runs the effective step gamma / w grows)
    n, d, K = 16, 5, 60
    prob = problems.QuadraticCosine(n, d, sigma=0.5, seed=0)
    topo = graphs.exponential(n)
    x0 = np.full(d, 3.0)
    clean = sv.simulate(prob, topo, step_size=0.05, n_iter=K, x0=x0, seed=0)
    lossy = sv.simulate(prob, graphs.with_message_loss(topo, 0.05, seed=0), step_size=0.05, n_iter=K, x0=x0, seed=0)
    roundoff = 64 * EPS * K * n * (1 + np.abs(clean.x).max() + np.abs(lossy.x).max())
    assert clean.mass_error.max() <= roundoff and np.all(clean.mass_lost == 0)
    assert lossy.mass_error[-1] > 1e6 * roundoff  # well above round-off
    assert 0.05 < lossy.weight_lost[-1] < n
    assert np.all(np.abs(lossy.mass_error - lossy.mass_lost) <= roundoff)
    assert np.all(np.abs(lossy.weight_error - lossy.weight_lost) <= 64 * EPS * K * n)
    # the matrices are column-substochastic, so a column-sum check finds them too
    P = mixing.push_matrix(graphs.with_message_loss(topo, 0.5, seed=0), 0)
    assert P.sum(axis=0).min() < 1 - 0.1
    with pytest.raises(ValueError, match="message loss applies to algorithm 'sgp' only"):
        sv.simulate(prob, graphs.with_message_loss(topo, 0.05, seed=0), step_size=0.05, n_iter=2, algorithm="dpsgd")


# ---------------------------------------------------------------- user topologies


class UserTopology(graphs.Topology):
    def __init__(self, edges, n=4):
        self.n, self.period, self.name, self._e = n, None, "user", edges

    def _edges(self, k):
        return self._e


def test_unsorted_user_topology_equals_its_sorted_twin():
    unsorted = [[3, 0], [2, 1], [0, 1], [0, 2], [1, 3]]
    prob = problems.QuadraticCosine(4, 3, sigma=0.3, seed=0)
    kw = dict(step_size=0.1, n_iter=30, x0=np.arange(3.0), seed=1)
    for tau in (0, 2):
        a = sv.simulate(prob, UserTopology(unsorted), tau=tau, delay="random", **kw)
        b = sv.simulate(prob, UserTopology(sorted(unsorted)), tau=tau, delay="random", **kw)
        c = sv.simulate(prob, graphs.PeriodicTopology(4, [unsorted]), tau=tau, delay="random", **kw)
        for key in ("z", "w", "consensus", "mass_error"):
            assert np.array_equal(getattr(a, key), getattr(b, key)) and np.array_equal(getattr(a, key), getattr(c, key))
        K, n = kw["n_iter"], 4  # the mass and weight sums: n nodes over K steps
        assert a.mass_error.max() <= roundoff(1 + np.abs(a.x).max(), K * n)
        assert a.weight_error.max() <= roundoff(1.0, K * n)
    ref = reference_sgp(prob, UserTopology(unsorted), **kw)
    tol = roundoff(1 + np.abs(ref["z"]).max(), kw["n_iter"])
    assert np.allclose(sv.simulate(prob, UserTopology(unsorted), **kw).z, ref["z"], rtol=0, atol=tol)
    assert UserTopology(unsorted).edges(0).tolist() == sorted(unsorted)


@pytest.mark.parametrize(
    "edges, msg",
    [
        ([[0, 1], [2, 2]], r"edges of step 0 must not contain self-loops .*got \(2, 2\)"),
        ([[0, 1], [1, 2], [0, 1]], r"edges of step 0 must not repeat an edge, got \(0, 1\) twice"),
        ([[0, 1], [1, 4]], r"edges of step 0 must have endpoints in \[0, 3\], got \(1, 4\)"),
        ([0, 1, 2], r"edges of step 0 must be an integer array of shape \(m, 2\), got shape \(3,\)"),
    ],
)
def test_bad_user_edges_are_rejected(edges, msg):
    prob = problems.QuadraticCosine(4, 2)
    with pytest.raises(ValueError, match=msg):
        sv.simulate(prob, UserTopology(edges), step_size=0.1, n_iter=3)
    with pytest.raises(ValueError, match=msg):
        UserTopology(edges).edges(0)
    with pytest.raises(ValueError, match=msg):  # through a wrapper
        graphs.with_link_failures(UserTopology(edges), 0.1, seed=0).edges(0)


# ---------------------------------------------------------------- divergence, disconnection, effective step


@pytest.mark.parametrize("algorithm", ["sgp", "allreduce"])
def test_divergence_names_the_actual_iteration(algorithm):
    prob = problems.QuadraticCosine(4, 2, sigma=0.0, seed=0)
    kw = dict(step_size=50.0, n_iter=400, x0=np.ones(2), algorithm=algorithm)
    topo = graphs.ring(4)
    import re

    with pytest.raises(sv.SimulationDivergedError) as every:
        sv.simulate(prob, topo, record_every=1, **kw)
    k_true = int(re.search(r"at iteration (\d+)", str(every.value))[1])
    assert 5 < k_true < 395 and k_true % 50 != 0
    with pytest.raises(sv.SimulationDivergedError, match=rf"node \d+ is not finite at iteration {k_true} "):
        sv.simulate(prob, topo, record_every=50, **kw)
    assert every.value.iteration == k_true and 0 <= every.value.node < 4
    # the per-node reference: the state is finite before k_true
    ok = sv.simulate(prob, topo, record_every=50, **dict(kw, n_iter=k_true - 1))
    assert np.isfinite(ok.x).all()


def test_divergence_without_mass_tracking_names_the_record_interval():
    prob = problems.QuadraticCosine(4, 2, sigma=0.0, seed=0)
    kw = dict(step_size=50.0, n_iter=400, x0=np.ones(2), track_mass=False)
    with pytest.raises(
        sv.SimulationDivergedError,
        match=r"not finite at iteration (\d+) \(first seen at this record; "
        r"finite at iteration \d+\)",
    ):
        sv.simulate(prob, graphs.ring(4), record_every=50, **kw)


def test_disconnected_schedule_is_reported_before_the_numbers_explode():
    # node 0 sends but receives nothing: not strongly connected
    topo = graphs.PeriodicTopology(4, [[[0, 1], [1, 2], [2, 3], [3, 1]]], name="deaf-0")
    prob = problems.QuadraticCosine(4, 2, sigma=0.1, seed=0)
    with pytest.raises(
        sv.MixingAssumptionError,
        match=r"not strongly connected over its period .*node\(s\) \[0\] "
        r"receive nothing; the push-sum weight of node 0 fell to",
    ) as exc:
        sv.simulate(prob, topo, step_size=0.01, n_iter=2000)
    import re

    w = float(re.search(r"fell to (\S+) at iteration (\d+)", str(exc.value))[1])
    assert 1e-12 < w < 1e-8  # reported at the first alarm, long before z = x / w explodes
    # aperiodic: the same, named by a window of iterations
    with pytest.raises(sv.MixingAssumptionError, match=r"over iterations \d+\.\.\d+: node\(s\) \[0\] receive nothing"):
        sv.simulate(prob, Aperiodic(topo), step_size=0.01, n_iter=2000)
    # user matrices: the same check
    P = mixing.push_matrix(topo, 0)
    with pytest.raises(sv.MixingAssumptionError, match=r"node\(s\) \[0\] receive nothing"):
        sv.simulate(prob, P, step_size=0.01, n_iter=2000)


def test_divergence_under_small_weights_names_the_effective_step():
    # message loss drains every weight: the step on z = x / w grows until the run blows up
    prob = problems.QuadraticCosine(16, 3, sigma=0.1, seed=0)
    topo = graphs.with_message_loss(graphs.exponential(16), 0.05, seed=0)
    with pytest.raises(
        sv.SimulationDivergedError,
        match=r"effective step step_size / w_min = \S+ with push-sum "
        r"weights down to \S+; problem L = 1.5",
    ):
        sv.simulate(prob, topo, step_size=0.1, n_iter=2000, x0=np.ones(3))


def test_tiny_weights_on_a_connected_schedule_are_not_blamed():
    # node 0 receives only every 12th step: weights ~ 12^-11, yet strongly connected over the period
    n = 12
    full = graphs.complete(n).edges(0)
    deaf = full[full[:, 1] != 0]
    topo = graphs.PeriodicTopology(n, [full] + [deaf] * 11, name="rarely-heard")
    prob = problems.QuadraticCosine(n, 2, sigma=0.0, seed=0)
    with pytest.warns(sv.EffectiveStepWarning, match=r"effective step step_size / w_min = 1e-06 / .* exceeds 1/L"):
        tr = sv.simulate(prob, topo, step_size=1e-6, n_iter=48)
    assert tr.weight_min.min() < 1e-10
    assert tr.effective_step_max == pytest.approx(1e-6 / tr.weight_min[:-1].min())


def test_effective_step_max_and_warning():
    n = 16
    prob = problems.QuadraticCosine(n, 3, sigma=0.1, seed=0)
    topo = graphs.random_peer(n, seed=0)
    gamma = 0.2 / prob.L
    with pytest.warns(sv.EffectiveStepWarning, match=r"effective step step_size / w_min = .* exceeds 1/L = "):
        tr = sv.simulate(prob, topo, step_size=gamma, n_iter=300)
    assert tr.effective_step_max == pytest.approx(gamma / tr.weight_min.min())
    assert tr.effective_step_max > 1 / prob.L
    import warnings

    with warnings.catch_warnings():
        warnings.simplefilter("error")
        ex = sv.simulate(prob, graphs.exponential(n), step_size=gamma, n_iter=50)  # w stays 1
        ar = sv.simulate(prob, topo, step_size=gamma, n_iter=50, algorithm="allreduce")
    assert ex.effective_step_max == gamma and ar.effective_step_max == gamma
    assert tr.to_dict()["effective_step_max"] == tr.effective_step_max


# ---------------------------------------------------------------- reproducibility and input errors


def test_seed_none_is_recorded_and_repeats_bit_for_bit():
    prob = problems.QuadraticCosine(5, 3, sigma=1.0, seed=0)
    kw = dict(step_size=0.05, n_iter=20, tau=1, delay="random")
    a = sv.simulate(prob, graphs.random_peer(5, seed=0), seed=None, **kw)
    b = sv.simulate(prob, graphs.random_peer(5, seed=0), seed=None, **kw)
    assert isinstance(a.seed, int) and a.seed != b.seed
    assert not np.array_equal(a.z, b.z)
    again = sv.simulate(prob, graphs.random_peer(5, seed=0), seed=a.seed, **kw)
    assert np.array_equal(again.z, a.z) and np.array_equal(again.consensus, a.consensus)
    assert a.to_dict()["seed"] == a.seed


def test_unclear_inputs_get_one_line_errors():
    prob = problems.QuadraticCosine(4, 3)
    args = dict(step_size=0.1, n_iter=3)
    with pytest.raises(
        ValueError,
        match=r"^delay must be a per-link delay matrix of shape \(4, 4\) for 4 nodes, "
        r"got shape \(3, 3\)$",
    ):
        sv.simulate(prob, graphs.ring(4), tau=1, delay=np.ones((3, 3), dtype=int), **args)
    with pytest.raises(ValueError, match=r"delay must be a per-link delay matrix of shape \(4, 4\)"):
        mixing.mixing_schedule(graphs.ring(4), tau=1, delay=np.ones((3, 3), dtype=int))
    with pytest.raises(
        TypeError, match=r"^x0 must be a numeric array of shape \(3,\) or \(4, 3\), got \['a', 'b', 'c'\]$"
    ):
        sv.simulate(prob, graphs.ring(4), x0=["a", "b", "c"], **args)


# --- fast paths of issue 11: each against an independent computation ---------


def _own_streams(grad, Z, rngs, out):
    """``grad_replicas`` by R calls, replica r on ``rngs[r]``."""
    for r, rng in enumerate(rngs):
        out[r] = grad(Z[r], rng)
    return out


class OwnNoisy(Noisy):
    """Noisy with one stream per replica (``grad_replicas``, as the built-ins): replica 0 of an
    R-replica run draws the one-replica run's noise (without it the replicas share one stream)."""

    def grad(self, z, rng):
        return super().grad(z, rng)

    def grad_replicas(self, Z, rngs, out):
        return _own_streams(self.grad, Z, rngs, out)


class RecordingNoisy(OwnNoisy):
    """OwnNoisy, keeping a copy of every gradient it returns (in call order)."""

    def __init__(self, n, d):
        super().__init__(n, d)
        self.calls = []

    def grad(self, z, rng):
        g = super().grad(z, rng)
        self.calls.append(np.array(g, copy=True))
        return g

    def grad_replicas(self, Z, rngs, out):
        return _own_streams(self.grad, Z, rngs, out)


@pytest.mark.parametrize("kw", [{}, {"tau": 2, "delay": "random"}, {"track_mass": False}])
@pytest.mark.parametrize("record_every", [1, 3])
@pytest.mark.parametrize("topo_name", ["random-peer", "exponential"])
def test_deferred_records_equal_per_node_reference(monkeypatch, kw, record_every, topo_name):
    """The metric arithmetic deferred to chunks of records (several chunks, the
    last one partial) against the per-node reference and recorded gradients,
    and bit for bit against the per-record computation."""
    from sgpverify.engine import trace

    n, d, K, R = 7, 3, 23, 3
    topo = graphs.by_name(topo_name, n, seed=1)
    args = dict(step_size=0.1, n_iter=K, x0=np.linspace(-1, 1, d), seed=4, replicas=R, record_every=record_every, **kw)
    monkeypatch.setattr(trace, "DEFER_ELEMS", 4 * n * R * d + 5)  # chunks of 4 records
    prob = RecordingNoisy(n, d)
    tr = sv.simulate(prob, topo, **args)
    prob.calls = prob.calls[1:]  # the first call is simulate's check of what a user's grad returns
    ref = reference_sgp(
        Noisy(n, d),
        topo,
        step_size=0.1,
        n_iter=K,
        x0=np.linspace(-1, 1, d),
        seed=4,
        tau=kw.get("tau", 0),
        delay=kw.get("delay", "fixed"),
        record_every=record_every,
    )["series"]
    assert np.array_equal(tr.iterations, ref["iterations"])
    rtol, atol = roundoff(1.0, K), roundoff(1 + np.abs(tr.z).max(), K)
    for key in ("consensus", "grad_norm_sq", "value", "weight_min", "weight_max"):
        np.testing.assert_allclose(tr.__getattribute__(key)[:, 0], ref[key], rtol=rtol, atol=atol, err_msg=key)
    # step_sq from the gradients the problem returned (R calls per step, replica order): a mean of n d squares
    G = np.array(prob.calls).reshape(K, R, n, d)
    want = np.mean(np.sum(G**2, axis=-1), axis=-1)[::record_every]
    np.testing.assert_allclose(tr.step_sq, want, rtol=roundoff(1.0, n * d), atol=0)
    if kw.get("track_mass", True):
        assert tr.mass_error.max() <= 64 * EPS * K * n * (1 + np.abs(tr.x).max())
        assert np.all(tr.mass_error >= 0)
    else:
        assert np.all(np.isnan(tr.mass_error))
    monkeypatch.setattr(trace, "DEFER_ELEMS", 0)  # every record computed on the spot
    direct = sv.simulate(OwnNoisy(n, d), topo, **args)
    for key in sv.Trace.SERIES + ("step_sq", "x", "w", "z"):
        assert np.array_equal(getattr(tr, key), getattr(direct, key), equal_nan=True), key


def test_weight_gossip_skipped_only_while_it_keeps_ones():
    """Period of three steps: two permutations (P 1 = 1) then a step with unequal
    in-degrees. The weight gossip may be skipped at steps 0 and 1 only; at steps
    3 and 4 (the permutations again) the weights are no longer 1 and must mix."""
    n, d, K = 6, 2, 9
    ring = [(i, (i + 1) % n) for i in range(n)]
    back = [(i, (i - 2) % n) for i in range(n)]
    star = [(j, 0) for j in range(1, n)]
    topo = graphs.PeriodicTopology(n, [ring, back, star], name="perm-perm-star")
    prob = Noisy(n, d)
    tr = sv.simulate(prob, topo, step_size=0.1, n_iter=K, x0=np.ones(d), seed=3)
    S = mixing.mixing_schedule(topo)
    X, w = dense_augmented(prob, S, K, 0.1, np.ones(d), 3)
    tol = roundoff(1 + np.abs(X).max(), K)  # K steps at the size of the state
    np.testing.assert_allclose(tr.w, w, rtol=roundoff(1.0, K))
    np.testing.assert_allclose(tr.x, X, rtol=roundoff(1.0, K), atol=tol)
    ref = reference_sgp(prob, topo, step_size=0.1, n_iter=K, x0=np.ones(d), seed=3, record_every=1)["series"]
    assert np.array_equal(tr.weight_min[:3], [1.0, 1.0, 1.0]) and tr.weight_min[3] < 1.0
    np.testing.assert_allclose(tr.weight_min, ref["weight_min"], rtol=roundoff(1.0, K))
    np.testing.assert_allclose(tr.weight_max, ref["weight_max"], rtol=roundoff(1.0, K))
    # a doubly stochastic schedule keeps every weight exactly 1, with the same x as the reference
    tr = sv.simulate(prob, graphs.exponential(n), step_size=0.1, n_iter=K, x0=np.ones(d), seed=3)
    ref = reference_sgp(prob, graphs.exponential(n), step_size=0.1, n_iter=K, x0=np.ones(d), seed=3)
    assert np.array_equal(tr.w, np.ones(n)) and np.all(tr.weight_error == 0)
    np.testing.assert_allclose(tr.z, ref["z"], rtol=roundoff(1.0, K), atol=roundoff(1 + np.abs(ref["z"]).max(), K))


@pytest.mark.parametrize("topo_name", ["random-peer", "exponential"])
def test_replica_major_gradients_equal_strided_path_and_reference(monkeypatch, topo_name):
    """Small states hand the problem contiguous replicas: replica 0 equals the
    one-replica run and the per-node reference, and every replica equals the
    strided per-replica views of the large-array path, bit for bit."""
    from sgpverify.engine import step

    n, d, K, R = 8, 3, 12, 4
    prob = problems.QuadraticCosine(n, d, seed=0)
    topo = graphs.by_name(topo_name, n, seed=2)
    args = dict(step_size=0.1, n_iter=K, x0=np.linspace(-1, 1, d), tau=1, delay="fixed")
    many = sv.simulate(prob, topo, replicas=R, seed=5, **args)
    one = sv.simulate(prob, topo, replicas=1, seed=5, **args)  # replica 0's stream alone
    assert np.array_equal(many.z[0], one.z)
    assert np.array_equal(many.grad_norm_sq[:, 0], one.grad_norm_sq)
    ref = reference_sgp(prob, topo, seed=5, **args)
    tol = roundoff(1 + np.abs(ref["z"]).max(), K)
    np.testing.assert_allclose(many.z[0], ref["z"], rtol=roundoff(1.0, K), atol=tol)
    monkeypatch.setattr(step, "BLAS_MIN", 1)  # the strided per-replica views
    strided = sv.simulate(prob, topo, replicas=R, seed=5, **args)
    # (not mass_error: the node sum of the steps is BLAS dgemv below BLAS_MIN, a numpy sum above)
    for key in ("x", "w", "z", "consensus", "grad_norm_sq", "value", "weight_min", "weight_max"):
        assert np.array_equal(getattr(many, key), getattr(strided, key), equal_nan=True), key


class _PerReplicaQC(problems.QuadraticCosine):
    """QuadraticCosine whose grad is overridden (by itself): the engine must keep the per-replica calls."""

    def grad(self, z, rng):
        return super().grad(z, rng)


class _PerReplicaDW(problems.DoubleWell):
    def grad(self, z, rng):
        return super().grad(z, rng)


class _LoopQC(_PerReplicaQC):
    """_PerReplicaQC with one stream per replica: ``grad_replicas`` by R calls of its ``grad``."""

    def grad(self, z, rng):
        return super().grad(z, rng)

    def grad_replicas(self, Z, rngs, out):
        return _own_streams(self.grad, Z, rngs, out)


class _LoopDW(_PerReplicaDW):
    def grad(self, z, rng):
        return super().grad(z, rng)

    def grad_replicas(self, Z, rngs, out):
        return _own_streams(self.grad, Z, rngs, out)


class _Forward:
    """A wrapper forwarding every attribute (as the suite's controls do)."""

    def __init__(self, inner):
        self._inner = inner

    def __getattr__(self, name):
        return getattr(self._inner, name)

    def grad(self, z, rng):
        return self._inner.grad(z, rng) + 1.0


def test_replica_grads_is_used_only_where_grad_is_the_one_it_was_written_for():
    from sgpverify.problems import replica_grads as _replica_grads

    qc = problems.QuadraticCosine(4, 3, seed=0)
    assert _replica_grads(qc) is not None and _replica_grads(problems.DoubleWell(4, 3, seed=0)) is not None
    assert _replica_grads(_PerReplicaQC(4, 3, seed=0)) is None  # a subclass that changes grad
    assert _replica_grads(_Forward(qc)) is None  # a wrapper: grad_replicas is not forwarded
    assert _replica_grads(problems.NonconvexLogistic(4, 3, seed=0)) is None  # not defined
    patched = problems.QuadraticCosine(4, 3, seed=0)
    patched.grad = lambda z, rng: qc.grad(z, rng)  # an instance attribute replaces grad
    assert _replica_grads(patched) is None


@pytest.mark.parametrize("kernels", ["numpy", "numba"])
@pytest.mark.parametrize(
    "make, per, topo, kw",
    [
        (problems.QuadraticCosine, _LoopQC, lambda: graphs.exponential(16), dict(replicas=8)),
        (
            problems.QuadraticCosine,
            _LoopQC,
            lambda: graphs.random_peer(16, seed=1),
            dict(replicas=8, tau=2, delay="random"),
        ),
        (
            problems.QuadraticCosine,
            _LoopQC,
            lambda: graphs.random_peer(16, seed=1),
            dict(replicas=3, momentum=0.9, debias=False),
        ),
        (problems.DoubleWell, _LoopDW, lambda: graphs.ring(8), dict(replicas=5, algorithm="dpsgd")),
    ],
    ids=["exponential", "delays", "momentum-no-debias", "doublewell-dpsgd"],
)
def test_one_gradient_call_per_step_gives_the_per_replica_bits(make, per, topo, kw, kernels, monkeypatch):
    from sgpverify.engine import kernels as compiled

    if kernels == "numba" and not compiled.available():
        pytest.skip("numba not installed (the fast extra)")
    monkeypatch.setenv("SGPVERIFY_KERNELS", kernels)
    n = topo().n
    a = sv.simulate(make(n, 10, seed=2), topo(), step_size=0.05, n_iter=60, seed=4, record_every=7, **kw)
    b = sv.simulate(per(n, 10, seed=2), topo(), step_size=0.05, n_iter=60, seed=4, record_every=7, **kw)
    for f in ("x", "w", "z", *sv.engine.Trace.SERIES, "iterations"):
        assert np.array_equal(getattr(a, f), getattr(b, f), equal_nan=True), f


# ---------------------------------------------------------------- random peer: the mixer's shortcut


class _SameEdges(graphs.Topology):
    """Another topology's edges through a user class: the mixer's general path."""

    def __init__(self, inner):
        self.n, self.inner, self.name = inner.n, inner, "same-edges"

    def _edges(self, k):
        return self.inner.edges(k)


@pytest.mark.parametrize("n", [2, 3, 17, 1000])
def test_random_peer_receivers_are_the_edges_receivers(n):
    topo = graphs.random_peer(n, seed=9)
    for k in (0, 5, 63, 64, 200):
        dst = topo.peers(k)
        assert dst.dtype == np.int32
        assert np.array_equal(dst, topo.edges(k)[:, 1])
    assert graphs.random_peer(1, seed=0).peers(0).size == 0
    # wrappers send other messages (lost, failed, delayed stragglers): never the shortcut
    for wrapped in (graphs.with_message_loss(topo, 0.1, seed=0), graphs.with_link_failures(topo, 0.1, seed=0)):
        assert not wrapped.one_peer
        assert sv.engine.mixers.Mixer(mixing.mixing_schedule(wrapped), 0, None, topology=wrapped)._one_peer is None
    with pytest.raises(ValueError, match="k must be an integer >= 0, got -1"):
        topo.peers(-1)


@pytest.mark.parametrize("mode", ["numpy", "numba"])
@pytest.mark.parametrize(
    "n,d,kw",
    [
        (16, 10, dict(replicas=3)),
        (16, 10, dict(replicas=3, tau=2, delay="random")),
        (12, 3, dict(tau=1, delay="fixed")),
        (12, 3, dict(tau=2, delay="link")),
        (70000, 4, dict(n_iter=5)),  # the weights by np.add.at on the numpy path (ADD_AT_MIN)
        (70000, 4, dict(n_iter=4, replicas=2, tau=1, delay="random")),
    ],
    ids=["small", "small-tau2-random", "tau1-fixed", "tau2-link", "large-n", "large-n-tau1-R2"],
)
def test_random_peer_shortcut_gives_the_general_paths_bits(mode, n, d, kw, monkeypatch):
    """The mixer builds a random-peer step from topo.peers(k) (weights 1/2, senders 0..n-1)
    instead of edges(k): every Trace field must equal the run through the general path."""
    if mode == "numba" and not sv.engine.kernels.available():
        pytest.skip("numba not installed (the fast extra)")
    monkeypatch.setenv("SGPVERIFY_KERNELS", mode)
    prob = problems.QuadraticCosine(n, d, sigma=0.5, seed=0)
    kw = dict(dict(step_size=0.05, n_iter=30, seed=3), **kw)
    if kw.get("delay") == "link":
        kw["delay"] = np.random.default_rng(0).integers(0, kw["tau"] + 1, size=(n, n))
    topo = graphs.random_peer(n, seed=1)
    mixer = sv.engine.mixers.Mixer(mixing.mixing_schedule(topo), 0, None, topology=topo)
    assert mixer._one_peer is not None  # the shortcut is taken
    a = sv.simulate(prob, topo, **kw)
    b = sv.simulate(prob, _SameEdges(graphs.random_peer(n, seed=1)), **kw)
    for f in ("x", "w", "z", *sv.Trace.SERIES, "step_sq"):
        assert np.array_equal(getattr(a, f), getattr(b, f), equal_nan=True), f


def test_weight_scatter_by_add_at_equals_the_sparse_product(monkeypatch):
    # the numpy path's weight gossip for many messages (np.add.at) against scipy's kernel
    monkeypatch.setenv("SGPVERIFY_KERNELS", "numpy")
    n = 1 << 15
    prob = problems.QuadraticCosine(n, 2, sigma=0.5, seed=0)
    kw = dict(step_size=0.05, n_iter=6, seed=3, replicas=2)
    monkeypatch.setattr(sv.engine.mixers, "ADD_AT_MIN", 1)
    a = sv.simulate(prob, graphs.erdos_renyi(n, 3.0 / n, seed=2), **kw)
    monkeypatch.setattr(sv.engine.mixers, "ADD_AT_MIN", 1 << 62)
    b = sv.simulate(prob, graphs.erdos_renyi(n, 3.0 / n, seed=2), **kw)
    assert not np.array_equal(a.w, 1.0)
    for f in ("x", "w", "z", "consensus", "mass_error"):
        assert np.array_equal(getattr(a, f), getattr(b, f)), f
